package prober

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// worker probes one container for one kind until stopped.
type worker struct {
	m      *Manager
	key    workerKey
	target Target
	probe  *corev1.Probe
	cancel context.CancelFunc
}

func seconds(n, def int32) time.Duration {
	if n <= 0 {
		n = def
	}
	return time.Duration(n) * time.Second
}

func (w *worker) run(ctx context.Context) {
	clk := w.m.cfg.Clock
	p := w.probe
	period := seconds(p.PeriodSeconds, 10)
	timeout := seconds(p.TimeoutSeconds, 1)
	success := int(p.SuccessThreshold)
	if success <= 0 || w.key.kind != Readiness {
		// Only readiness may ask for more than one success; Kubernetes rejects it elsewhere.
		success = 1
	}
	failure := int(p.FailureThreshold)
	if failure <= 0 {
		failure = 3
	}
	delay := time.Duration(p.InitialDelaySeconds)*time.Second - clk.Since(w.target.StartedAt)
	timer := clk.NewTimer(delay)
	defer timer.Stop()

	defer w.forget()
	okRun, failRun := 0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		}
		if !w.gated() {
			timer.Reset(period)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err := w.m.run(pctx, p, w.target)
		cancel()
		if ctx.Err() != nil {
			return
		}
		w.count(err == nil)
		if err == nil {
			okRun, failRun = okRun+1, 0
			if okRun >= success {
				w.m.set(w, Success)
				if w.key.kind == Startup {
					// A started container is not probed for startup again.
					return
				}
			}
		} else {
			okRun, failRun = 0, failRun+1
			w.m.log.Debug("probe failed", "pod", w.target.Pod.Namespace+"/"+w.target.Pod.Name, "container", w.key.container, "kind", string(w.key.kind), "err", err)
			if w.m.cfg.Recorder != nil {
				w.m.cfg.Recorder.Eventf(w.target.Pod, corev1.EventTypeWarning, "Unhealthy", "%s probe failed: %v", kindTitle(w.key.kind), err)
			}
			if failRun >= failure {
				w.m.set(w, Failure)
				if w.key.kind != Readiness {
					// The container is killed; its successor gets a new worker.
					return
				}
			}
		}
		timer.Reset(period)
	}
}

// probeResults are prober_probe_total's result label values.
var probeResults = map[bool]string{true: "successful", false: "failed"}

// count adds one run to prober_probe_total.
func (w *worker) count(ok bool) {
	if c := w.m.cfg.Results; c != nil {
		c.WithLabelValues(w.labels(probeResults[ok])...).Inc()
	}
}

// forget drops the worker's series once it stops.
func (w *worker) forget() {
	if c := w.m.cfg.Results; c != nil {
		for _, r := range probeResults {
			c.DeleteLabelValues(w.labels(r)...)
		}
	}
}

func (w *worker) labels(result string) []string {
	pod := w.target.Pod
	return []string{kindTitle(w.key.kind), result, w.key.container, pod.Name, pod.Namespace, string(pod.UID)}
}

// gated reports whether the probe may run: liveness and readiness wait for startup.
func (w *worker) gated() bool {
	if w.key.kind == Startup || w.target.Container.StartupProbe == nil {
		return true
	}
	r, _ := w.m.Get(w.target.ContainerID, Startup)
	return r == Success
}

func kindTitle(k Kind) string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	}
	return "Startup"
}
