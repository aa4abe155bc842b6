package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/scheduler/internal/cache"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/queue"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// gatedAPI holds every Bind until release is closed, so a test can count how many run at once.
type gatedAPI struct {
	mu       sync.Mutex
	inflight int
	peak     int
	bound    map[string]string
	err      error
	release  chan struct{}
}

func (g *gatedAPI) Bind(ctx context.Context, pod *corev1.Pod, node string) error {
	g.mu.Lock()
	g.inflight++
	g.peak = max(g.peak, g.inflight)
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inflight--
	if g.err != nil {
		return g.err
	}
	g.bound[pod.Namespace+"/"+pod.Name] = node
	return nil
}

func (g *gatedAPI) UpdatePodStatus(_ context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	return pod, nil
}

func (g *gatedAPI) snapshot() (inflight, peak, bound int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight, g.peak, len(g.bound)
}

type podMap map[string]*corev1.Pod

func (m podMap) Get(ns, name string) (*corev1.Pod, error) {
	if p, ok := m[ns+"/"+name]; ok {
		return p, nil
	}
	return nil, apierror.New(apierror.ErrNotFound, "pod %s not found", name)
}

// waitFor polls cond with a generous deadline; no timing is asserted.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startPool runs a Scheduler with workers bind workers over pods p0..p<n-1> and one big node.
func startPool(t *testing.T, api *gatedAPI, workers, n int) *Scheduler {
	t.Helper()
	clk := clock.NewFake(time.Unix(1000, 0))
	q := queue.New(clk, 0, 0, nil)
	pods := podMap{}
	s := New(Config{API: api, Pods: pods, Cache: cache.New(clk, 0), Queue: q, Strategy: framework.LeastPods{},
		Recorder: record.NewFake(1000), Clock: clk, BindWorkers: workers})
	s.NodeHandler().OnAdd(mkNode("a", "1000"))
	for i := range n {
		p := mkPod(fmt.Sprintf("p%d", i))
		pods[p.Namespace+"/"+p.Name] = p
	}
	// Pods are registered before Start so the loop never reads the map while it is written.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	for i := range n {
		s.PodHandler().OnAdd(pods[fmt.Sprintf("default/p%d", i)])
	}
	return s
}

func TestBindPoolRunsBindsConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name    string
		workers int
		pods    int
	}{
		{name: "pool smaller than the backlog", workers: 4, pods: 10},
		{name: "one worker binds one at a time", workers: 1, pods: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &gatedAPI{bound: map[string]string{}, release: make(chan struct{})}
			startPool(t, api, tc.workers, tc.pods)
			waitFor(t, "every worker busy", func() bool { in, _, _ := api.snapshot(); return in == tc.workers })
			close(api.release)
			waitFor(t, "all pods bound", func() bool { _, _, b := api.snapshot(); return b == tc.pods })
			_, peak, _ := api.snapshot()
			if diff := cmp.Diff(tc.workers, peak); diff != "" {
				t.Errorf("peak concurrent binds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindPoolFailureForgetsAssumption(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		wantBackoff int
	}{
		{name: "transient error is retried", err: errors.New("connection reset"), wantBackoff: 1},
		{name: "conflict is not retried", err: apierror.New(apierror.ErrConflict, "already bound"), wantBackoff: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &gatedAPI{bound: map[string]string{}, release: make(chan struct{}), err: tc.err}
			s := startPool(t, api, 2, 1)
			waitFor(t, "the bind to start", func() bool { in, _, _ := api.snapshot(); return in == 1 })
			if !s.cfg.Cache.IsAssumed("default", "p0") {
				t.Fatal("pod not assumed while its bind is in flight")
			}
			close(api.release)
			waitFor(t, "the assumption to be forgotten", func() bool { return !s.cfg.Cache.IsAssumed("default", "p0") })
			waitFor(t, "the key to be settled", func() bool { return s.cfg.Queue.Backoffs("default/p0") == tc.wantBackoff })
		})
	}
}
