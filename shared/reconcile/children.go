package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// Event reasons of Children, Kubernetes' own.
const (
	EventSuccessfulCreate = "SuccessfulCreate"
	EventFailedCreate     = "FailedCreate"
	EventSuccessfulDelete = "SuccessfulDelete"
	EventFailedDelete     = "FailedDelete"
)

// Children creates and deletes the children of owners (a ReplicaSet's or a Job's pods) the way
// Kubernetes' PodControl does, keeping the owner's Expectations: each child is expected before
// it is asked for, and observed at once when the asking fails, so the next sync neither waits
// for it nor makes it twice. Events go to the owner.
type Children[T runtime.Object] struct {
	Writer       client.Writer[T]
	Expectations *Expectations
	Recorder     record.EventRecorder
	Clock        clock.Clock
}

// Create makes n children, newChild(i) for i from 0, in slow-start batches (SlowStart): a
// batch that fails stops the rest. It returns how many were made.
func (c Children[T]) Create(ctx context.Context, owner runtime.Object, key string, n int, newChild func(i int) T) (int, error) {
	if n <= 0 {
		return 0, nil
	}
	c.Expectations.ExpectCreations(key, n, c.Clock.Now())
	var mu sync.Mutex
	next := 0
	made, attempted, err := SlowStart(ctx, n, 1, SlowStartParallel, func(ctx context.Context) error {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		child, err := c.Writer.Create(ctx, newChild(i), metav1.CreateOptions{})
		if err != nil {
			c.Expectations.CreationObserved(key)
			return err
		}
		c.Recorder.Eventf(owner, corev1.EventTypeNormal, EventSuccessfulCreate, "Created pod: %s", name(child))
		return nil
	})
	for range n - attempted {
		c.Expectations.CreationObserved(key)
	}
	if err != nil {
		c.Recorder.Eventf(owner, corev1.EventTypeWarning, EventFailedCreate, "Error creating: %v", err)
		return made, fmt.Errorf("%d of %d made: %w", made, n, err)
	}
	return made, nil
}

// Delete deletes children at once, in parallel, each guarded by its uid. A child already gone,
// or replaced by another of its name, is no failure.
func (c Children[T]) Delete(ctx context.Context, owner runtime.Object, key string, children []T) error {
	if len(children) == 0 {
		return nil
	}
	keys := make([]string, len(children))
	for i, ch := range children {
		keys[i] = objectKey(ch)
	}
	c.Expectations.ExpectDeletions(key, keys, c.Clock.Now())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, ch := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _ := meta.Accessor(ch)
			uid := m.GetUID()
			err := c.Writer.Delete(ctx, m.GetNamespace(), m.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err == nil {
				c.Recorder.Eventf(owner, corev1.EventTypeNormal, EventSuccessfulDelete, "Deleted pod: %s", m.GetName())
				return
			}
			c.Expectations.DeletionObserved(key, keys[i])
			if errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrConflict) {
				return
			}
			mu.Lock()
			errs = append(errs, fmt.Errorf("delete %s: %w", keys[i], err))
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Recorder.Eventf(owner, corev1.EventTypeWarning, EventFailedDelete, "Error deleting: %v", err)
		return err
	}
	return nil
}

func name(obj runtime.Object) string {
	if m, err := meta.Accessor(obj); err == nil {
		return m.GetName()
	}
	return ""
}

func objectKey(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}
