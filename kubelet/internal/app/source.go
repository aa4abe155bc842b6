package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/bus"
)

// desiredPods receives the pods this node should run.
type desiredPods interface {
	// Update sets the desired state of a pod; a deletionTimestamp means terminate it.
	Update(pod *corev1.Pod)
	// Remove forgets a pod the API no longer has: whatever still runs of it is stopped.
	Remove(uid types.UID)
}

// podCache keeps the desired pods across kubelet restarts.
type podCache interface {
	Put(ctx context.Context, pod *corev1.Pod) error
	Delete(ctx context.Context, namespace, name string) error
	List(ctx context.Context) ([]*corev1.Pod, error)
}

// podLister lists the pods bound to this node.
type podLister interface {
	List(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.PodList, error)
}

// source turns bus events and relists into the desired state, dropping stale events: the bus
// is a hint, the relist (on start, on every reconnect, periodically) is the truth.
type source struct {
	node  string
	api   podLister
	sink  desiredPods
	cache podCache
	log   *slog.Logger

	// synced is told after every complete relist (pods.Manager.MarkSynced): only then are the
	// containers of pods nobody asked for removed.
	synced func()
	// period is how often Start relists.
	period time.Duration

	mu    sync.Mutex
	known map[types.UID]*corev1.Pod
}

func newSource(node string, api podLister, sink desiredPods, cache podCache, log *slog.Logger) *source {
	return &source{node: node, api: api, sink: sink, cache: cache, log: log, known: map[types.UID]*corev1.Pod{}}
}

func rv(p *corev1.Pod) int64 {
	n, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
	return n
}

// handle is the bus handler of the node's queue.
func (s *source) handle(ctx context.Context, d bus.Delivery) error {
	ev, err := bus.DecodeEvent(d.Body)
	if err != nil {
		s.log.Warn("undecodable bus message", "key", d.RoutingKey, "err", err)
		return nil
	}
	var pod corev1.Pod
	if err := json.Unmarshal(ev.Object, &pod); err != nil || pod.UID == "" {
		s.log.Warn("bus message without a pod", "key", d.RoutingKey, "err", err)
		return nil
	}
	if pod.Spec.NodeName != s.node {
		return nil
	}
	if ev.Type == bus.Deleted {
		return s.forget(ctx, &pod)
	}
	return s.apply(ctx, &pod)
}

// apply records a desired pod unless a newer version of it is already known.
func (s *source) apply(ctx context.Context, pod *corev1.Pod) error {
	s.mu.Lock()
	if old, ok := s.known[pod.UID]; ok && rv(old) >= rv(pod) {
		s.mu.Unlock()
		return nil
	}
	s.known[pod.UID] = pod
	s.mu.Unlock()
	if s.cache != nil {
		if err := s.cache.Put(ctx, pod); err != nil {
			// The cache only matters when the apiserver is down at start; running goes on.
			s.log.Warn("caching desired pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
	s.sink.Update(pod)
	return nil
}

// forget drops a pod the API deleted.
func (s *source) forget(ctx context.Context, pod *corev1.Pod) error {
	s.mu.Lock()
	delete(s.known, pod.UID)
	s.mu.Unlock()
	if s.cache != nil {
		if err := s.cache.Delete(ctx, pod.Namespace, pod.Name); err != nil {
			s.log.Warn("uncaching deleted pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
	s.sink.Remove(pod.UID)
	return nil
}

// relist makes the desired state the API's: pods bound to the node are applied, known pods
// the API no longer has are forgotten.
func (s *source) relist(ctx context.Context) error {
	list, err := s.api.List(ctx, "", metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", s.node).String()})
	if err != nil {
		return fmt.Errorf("list pods of node %s: %w", s.node, err)
	}
	present := map[types.UID]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		present[pod.UID] = true
		if err := s.apply(ctx, pod); err != nil {
			return err
		}
	}
	s.mu.Lock()
	var gone []*corev1.Pod
	for uid, p := range s.known {
		if !present[uid] {
			gone = append(gone, p)
		}
	}
	s.mu.Unlock()
	for _, p := range gone {
		if err := s.forget(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// connected relists once the bus queue is bound: everything changed after that is in it.
func (s *source) connected(ctx context.Context) error {
	if err := s.relist(ctx); err != nil {
		return err
	}
	if s.synced != nil {
		s.synced()
	}
	return nil
}

// Start relists every period until ctx ends, the safety net under the bus.
func (s *source) Start(ctx context.Context) error {
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.connected(ctx); err != nil {
				s.log.Warn("relisting pods", "err", err)
			}
		}
	}
}

// fromCache restores the desired pods a previous run cached, for when the apiserver cannot be
// reached at start: what ran keeps running, nothing new is learned until the API answers.
func (s *source) fromCache(ctx context.Context) (int, error) {
	if s.cache == nil {
		return 0, nil
	}
	pods, err := s.cache.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("read cached pods: %w", err)
	}
	for _, p := range pods {
		if p.Spec.NodeName != s.node {
			continue
		}
		s.mu.Lock()
		s.known[p.UID] = p
		s.mu.Unlock()
		s.sink.Update(p)
	}
	return len(pods), nil
}
