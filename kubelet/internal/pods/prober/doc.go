// Package prober runs a pod's liveness, readiness and startup probes (httpGet, tcpSocket,
// exec), one worker per container and probe kind on an injected clock, and keeps the results
// the pod worker reads: readiness drives the Ready condition, liveness and startup failures
// get the container restarted.
package prober
