package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/podstatus"
)

// podHandler follows the pods of functions (those labelled LabelFunction).
func (g *Gateway) podHandler() informer.Handler {
	return informer.HandlerFuncs{
		AddFunc:    func(obj runtime.Object) { g.podChanged(obj) },
		UpdateFunc: func(_, obj runtime.Object) { g.podChanged(obj) },
		DeleteFunc: func(obj runtime.Object) {
			if pod, ok := informer.DeletedObject(obj).(*corev1.Pod); ok {
				g.podGone(pod)
			}
		},
	}
}

func functionOf(pod *corev1.Pod) (string, bool) {
	fn := pod.Labels[serverlessv1.LabelFunction]
	if fn == "" {
		return "", false
	}
	return pod.Namespace + "/" + fn, true
}

// podChanged updates the pod's backend: a pod with an address that is not terminating is a
// backend; it takes calls once ready, by the kubelet's word or the gateway's own probe.
func (g *Gateway) podChanged(obj runtime.Object) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	key, ok := functionOf(pod)
	if !ok {
		return
	}
	usable := pod.DeletionTimestamp == nil && pod.Status.PodIP != "" &&
		(pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodPending)
	if !usable {
		g.podGone(pod)
		return
	}
	p := g.pool(key)
	apiReady := podstatus.Ready(pod)
	version, _ := strconv.ParseInt(pod.Labels[serverlessv1.LabelVersion], 10, 64)

	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.backends[pod.Name]
	if b == nil || b.ip != pod.Status.PodIP {
		b = &backend{pod: pod.Name, ip: pod.Status.PodIP, version: version,
			url: "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(serverlessv1.RuntimePort)) + serverlessv1.RuntimeInvokePath}
		p.put(b)
	}
	b.version = version
	wasReady := b.ready()
	switch {
	case apiReady && !b.apiReady:
		b.apiReady, b.everAPIReady, b.down = true, true, false
	case !apiReady && b.apiReady:
		// The kubelet's probe failed: believe it.
		b.apiReady, b.probed = false, false
	}
	if !b.ready() && !b.everAPIReady && b.stopProbe == nil {
		g.startProbe(p, b)
	}
	if b.ready() && !wasReady {
		p.becameReady()
	}
}

func (g *Gateway) podGone(pod *corev1.Pod) {
	key, ok := functionOf(pod)
	if !ok {
		return
	}
	g.mu.Lock()
	p := g.pools[key]
	g.mu.Unlock()
	if p == nil {
		return
	}
	p.mu.Lock()
	if b := p.backends[pod.Name]; b != nil {
		p.dropLocked(b)
	}
	p.mu.Unlock()
	g.forgetIfGone(pod.Namespace, pod.Labels[serverlessv1.LabelFunction])
}

// forgetIfGone drops the pool of a function that no longer exists once nothing is in it (its
// pods gone, no call waiting), so a gateway's memory follows the functions that exist.
func (g *Gateway) forgetIfGone(namespace, name string) {
	if _, err := g.functions.Get(namespace, name); err == nil {
		return
	}
	key := namespace + "/" + name
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pools[key]
	if p == nil {
		return
	}
	p.mu.Lock()
	idle := len(p.backends) == 0 && len(p.waiters) == 0 && !p.reactivating
	p.mu.Unlock()
	if idle {
		delete(g.pools, key)
	}
}

// startProbe probes the backend's /readyz until it answers 200 (then marks it probed, and
// not down) or the backend is dropped. Quick at first, as a pod that just got its address
// is usually a cold start someone waits for; slower after a while. Call with p.mu held.
func (g *Gateway) startProbe(p *pool, b *backend) {
	ctx, cancel := context.WithCancel(g.baseCtx)
	b.stopProbe = cancel
	url := "http://" + net.JoinHostPort(b.ip, strconv.Itoa(serverlessv1.RuntimePort)) + serverlessv1.RuntimeReadyPath
	go func() {
		start := time.Now()
		for {
			if g.probe(ctx, url) == nil {
				p.mu.Lock()
				b.stopProbe = nil
				wasReady := b.ready()
				b.probed, b.down = true, false
				if !wasReady && p.backends[b.pod] == b {
					p.becameReady()
				}
				p.mu.Unlock()
				cancel()
				return
			}
			interval := g.cfg.ProbeInterval
			if time.Since(start) > 30*time.Second {
				interval = time.Second
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
}

func (g *Gateway) probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz answered %d", resp.StatusCode)
	}
	return nil
}

// markDown stops calls going to a backend that could not be reached, and probes it until it
// answers again (or its pod goes).
func (g *Gateway) markDown(p *pool, b *backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.down || p.backends[b.pod] != b {
		return
	}
	b.down, b.probed = true, false
	if b.stopProbe == nil {
		g.startProbe(p, b)
	}
}
