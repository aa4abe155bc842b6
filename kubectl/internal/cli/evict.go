package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// evictRetry is how long drain waits before asking again for an eviction a disruption budget
// refused, as kubectl does.
const evictRetry = 5 * time.Second

// errOutMu keeps the evictions' retry lines whole.
var errOutMu sync.Mutex

// evictAll evicts the pods through the Eviction API, all at once, each retried every 5 s
// while its PodDisruptionBudget refuses (429), until ctx ends.
func (o *options) evictAll(ctx context.Context, cl *client.Client, pods []corev1.Pod, opts metav1.DeleteOptions) error {
	res, err := scheme.Lookup("pods")
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range pods {
		fmt.Fprintf(o.Out, "evicting pod %s/%s\n", p.Namespace, p.Name)
		wg.Add(1)
		go func(p corev1.Pod) {
			defer wg.Done()
			if err := o.evict(ctx, cl, res, p, opts); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(p)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (o *options) evict(ctx context.Context, cl *client.Client, res *scheme.Resource, p corev1.Pod, opts metav1.DeleteOptions) error {
	del := opts
	uid := p.UID
	del.Preconditions = &metav1.Preconditions{UID: &uid}
	ev := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, DeleteOptions: &del}
	for {
		_, err := cl.Post().Resource(res, p.Namespace, p.Name, "eviction").Body(ev).Do(ctx)
		switch {
		case err == nil, errors.Is(err, apierror.ErrNotFound), errors.Is(err, apierror.ErrConflict):
			return nil
		case errors.Is(err, apierror.ErrTooManyRequests):
			errOutMu.Lock()
			fmt.Fprintf(o.ErrOut, "error when evicting pods/%q -n %q (will retry after 5s): %v\n", p.Name, p.Namespace, err)
			errOutMu.Unlock()
		default:
			return fmt.Errorf("error when evicting pods/%q -n %q: %w", p.Name, p.Namespace, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(evictRetry):
		}
	}
}
