// Package backoff keeps the per-container restart back-off of the kubelet: 10 s doubling to
// 5 min, forgotten once a container has run for 10 min, as Kubernetes' CrashLoopBackOff.
package backoff
