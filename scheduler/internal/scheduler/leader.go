package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/informer"
)

// Gate lets the scheduling loop act only once this process leads and its cache has caught up
// since it took over: a standby's cache is only as fresh as its last periodic relist, and
// scheduling from it would bind pods already bound or onto nodes since cordoned. Use it as
// Config.Leader and run Start beside the scheduler.
type Gate struct {
	leader   Leader
	catchUp  func(ctx context.Context) error
	log      *slog.Logger
	caughtUp atomic.Bool
}

// NewGate gates on leader, calling catchUp at the start of every term.
func NewGate(leader Leader, catchUp func(ctx context.Context) error, log *slog.Logger) *Gate {
	return &Gate{leader: leader, catchUp: catchUp, log: log}
}

// IsLeader implements Leader: the process leads and has caught up.
func (g *Gate) IsLeader() bool { return g.caughtUp.Load() && g.leader.IsLeader() }

// Start watches leadership until ctx ends and catches up at the start of every term.
func (g *Gate) Start(ctx context.Context) error {
	const poll = 100 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
		switch leading := g.leader.IsLeader(); {
		case !leading:
			g.caughtUp.Store(false)
		case !g.caughtUp.Load():
			if err := g.catchUp(ctx); err != nil {
				g.log.Warn("catching up after taking the lead", "err", err)
				continue
			}
			g.log.Info("caught up; scheduling")
			g.caughtUp.Store(true)
		}
	}
}

// Lister lists one kind from the API, past the cache.
type Lister[L runtime.Object] interface {
	List(ctx context.Context, namespace string, opts metav1.ListOptions) (L, error)
}

// CatchUp lists nodes and pods and applies them to the informers (stale items are dropped by
// resourceVersion), then asks for a full relist to notice deletions.
func CatchUp(nodes Lister[*corev1.NodeList], pods Lister[*corev1.PodList], nodeInf, podInf *informer.Informer) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		nl, err := nodes.List(ctx, "", metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list nodes: %w", err)
		}
		for i := range nl.Items {
			if _, err := nodeInf.Apply(watch.Modified, &nl.Items[i]); err != nil {
				return fmt.Errorf("apply node: %w", err)
			}
		}
		pl, err := pods.List(ctx, "", metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		for i := range pl.Items {
			if _, err := podInf.Apply(watch.Modified, &pl.Items[i]); err != nil {
				return fmt.Errorf("apply pod: %w", err)
			}
		}
		podInf.RequestRelist()
		nodeInf.RequestRelist()
		return nil
	}
}

// Run waits until synced reports the caches full (scheduling from a partial cache would
// overcommit nodes whose pods are not listed yet), then schedules until ctx ends, handing
// Sweep every cached pod of podInf once per sweepPeriod: a pending pod that no queue holds
// (which would be a bug) waits one period instead of forever.
func (s *Scheduler) Run(ctx context.Context, synced func() bool, podInf *informer.Informer, sweepPeriod time.Duration) error {
	if !informer.WaitForSync(ctx, synced) {
		return nil
	}
	s.log.Info("caches synced")
	go func() {
		t := time.NewTicker(sweepPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			objs := podInf.Store().List()
			pods := make([]*corev1.Pod, 0, len(objs))
			for _, o := range objs {
				if p, ok := o.(*corev1.Pod); ok {
					pods = append(pods, p)
				}
			}
			s.Sweep(pods)
		}
	}()
	return s.Start(ctx)
}
