package podsuite

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// Labels the kubelet puts on its containers (kubelet/internal/pods/spec,
// internal to the kubelet module).
const (
	labelPodName      = "minik8s.io/pod-name"
	labelPodNamespace = "minik8s.io/pod-namespace"
	labelSandbox      = "minik8s.io/sandbox"
)

// podRunning is the end of startup: phase Running and every app container
// ready and started.
func podRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if !s.Ready || s.State.Running == nil || (s.Started != nil && !*s.Started) {
			return false
		}
	}
	return true
}

func (e *env) pod(name string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: map[string]string{"app": "podbench"}},
		Spec: corev1.PodSpec{
			NodeName:                      e.node,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "echo", Image: e.cfg.Image, ImagePullPolicy: corev1.PullIfNotPresent,
			}},
		},
	}
}

// dockerStarts records when Docker started each pod's sandbox and app
// container, from its event stream, until ctx ends.
type dockerStarts struct {
	mu      sync.Mutex
	sandbox map[string]time.Time
	app     map[string]time.Time
	done    chan struct{}
}

func (e *env) watchDocker(ctx context.Context) *dockerStarts {
	d := &dockerStarts{sandbox: map[string]time.Time{}, app: map[string]time.Time{}, done: make(chan struct{})}
	f := filters.NewArgs(filters.Arg("type", "container"), filters.Arg("event", "start"),
		filters.Arg("label", labelPodNamespace+"="+e.ns))
	msgs, errs := e.docker.Events(ctx, events.ListOptions{Filters: f})
	go func() {
		defer close(d.done)
		for {
			select {
			case m := <-msgs:
				name, at := m.Actor.Attributes[labelPodName], time.Unix(0, m.TimeNano)
				d.mu.Lock()
				if m.Actor.Attributes[labelSandbox] == "true" {
					d.sandbox[name] = at
				} else {
					d.app[name] = at
				}
				d.mu.Unlock()
			case <-errs:
				return
			}
		}
	}()
	return d
}

// runPods creates n pods named prefix-i on the schedule and waits until the
// watch sees each running.
func (e *env) runPods(ctx context.Context, prefix string, n int, interval time.Duration) ([]timeline, error) {
	list, err := e.pods.List(ctx, e.ns, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dctx, dcancel := context.WithCancel(ctx)
	dstarts := e.watchDocker(dctx)
	w, err := e.pods.Watch(wctx, e.ns, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		dcancel()
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	defer w.Stop()

	ts := make([]timeline, n)
	index := map[string]int{}
	for i := range n {
		index[fmt.Sprintf("%s-%d", prefix, i)] = i
	}
	var mu sync.Mutex
	running := map[string]time.Time{}
	allRunning := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		for ev := range w.ResultChan() {
			at := time.Now()
			if ev.Type == watch.Error {
				watchErr <- fmt.Errorf("watch error: %v", ev.Object)
				return
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || !podRunning(p) {
				continue
			}
			if _, ok := index[p.Name]; !ok {
				continue
			}
			mu.Lock()
			if _, seen := running[p.Name]; !seen {
				running[p.Name] = at
				if len(running) == n {
					close(allRunning)
				}
			}
			mu.Unlock()
		}
		watchErr <- errors.New("watch ended early")
	}()

	var createErr error
	var errOnce sync.Once
	schedule(ctx, n, interval, func(i int) {
		start := time.Now()
		if _, err := e.pods.Create(ctx, e.pod(fmt.Sprintf("%s-%d", prefix, i)), metav1.CreateOptions{}); err != nil {
			errOnce.Do(func() { createErr = fmt.Errorf("create pod: %w", err) })
		}
		ts[i].Start = start
	})
	if createErr != nil {
		dcancel()
		return nil, createErr
	}
	select {
	case <-allRunning:
	case err := <-watchErr:
		dcancel()
		return nil, err
	case <-time.After(e.cfg.PodTimeout):
		dcancel()
		mu.Lock()
		defer mu.Unlock()
		var missing []string
		for name := range index {
			if _, ok := running[name]; !ok {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("%d of %d pods not running after %s (kubelet log %s): %s", len(missing), n, e.cfg.PodTimeout, e.kubeletLog, strings.Join(missing, " "))
	case <-ctx.Done():
		dcancel()
		return nil, ctx.Err()
	}
	// Docker's start events precede the status the watch saw; a short grace
	// covers their delivery.
	time.Sleep(200 * time.Millisecond)
	dcancel()
	<-dstarts.done
	mu.Lock()
	defer mu.Unlock()
	dstarts.mu.Lock()
	defer dstarts.mu.Unlock()
	for name, i := range index {
		ts[i].Running = running[name]
		ts[i].Sandbox = dstarts.sandbox[name]
		ts[i].App = dstarts.app[name]
	}
	return ts, nil
}

// deletePods deletes every pod of the namespace, waits until the kubelet
// has finalized them and removes containers it left behind.
func (e *env) deletePods(ctx context.Context) error {
	list, err := e.pods.List(ctx, e.ns, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for _, p := range list.Items {
		if err := e.pods.Delete(ctx, e.ns, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := e.pods.List(ctx, e.ns, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list pods: %w", err)
		}
		if len(list.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d pods still there 2m after deletion (kubelet log %s)", len(list.Items), e.kubeletLog)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return e.removeContainers(ctx, labelPodNamespace+"="+e.ns)
}

// removeContainers force-removes every container with the label.
func (e *env) removeContainers(ctx context.Context, label string) error {
	cs, err := e.docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range cs {
		if err := e.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
