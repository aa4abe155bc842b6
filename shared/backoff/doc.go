// Package backoff keeps exponential back-offs by key: the kubelet's per-container restart
// back-off (10 s doubling to 5 min, forgotten once a container has run for 10 min, as
// Kubernetes' CrashLoopBackOff) and the DaemonSet controller's back-off before replacing a
// failed pod on the same node (1 s doubling to 15 min).
package backoff
