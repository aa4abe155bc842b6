package registry

import (
	"context"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/scheme"
)

// Source lists and watches every resource straight from the registry, across all namespaces,
// for the informers the apiserver keeps for itself (the RBAC cache, the Node authorizer's
// graph, the live objects behind ServiceAccount tokens): what a loopback client would give,
// without HTTP or encoding. Only typed objects are served.
func (r *Registry) Source() informer.Source {
	return func(res *scheme.Resource, metadataOnly bool) informer.ListerWatcher {
		if metadataOnly {
			return nil
		}
		return registrySource{r: r, res: res}
	}
}

type registrySource struct {
	r   *Registry
	res *scheme.Resource
}

func (s registrySource) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	out, err := s.r.List(ctx, Key{Resource: s.res}, ListOptions{Limit: opts.Limit, Continue: opts.Continue})
	if err != nil {
		return nil, err
	}
	return NewList(s.res, out.Items, out.Revision, out.Continue)
}

func (s registrySource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	rev, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil && opts.ResourceVersion != "" {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &registryWatch{cancel: cancel, out: make(chan watch.Event)}
	in := s.r.Watch(ctx, Key{Resource: s.res}, Selectors{}, rev)
	go w.run(ctx, in)
	return w, nil
}

// registryWatch turns the registry's batches into a watch.Interface: one event per visible
// change, and an Error event carrying the Status of the error that ends the watch.
type registryWatch struct {
	cancel context.CancelFunc
	out    chan watch.Event
	once   sync.Once
}

func (w *registryWatch) run(ctx context.Context, in <-chan WatchBatch) {
	defer close(w.out)
	for b := range in {
		for _, ev := range b.Events {
			if ev.Type == "" {
				continue
			}
			select {
			case w.out <- watch.Event{Type: ev.Type, Object: ev.Object}:
			case <-ctx.Done():
				return
			}
		}
		if b.Err != nil {
			select {
			case w.out <- watch.Event{Type: watch.Error, Object: apierror.ToStatus(b.Err)}:
			case <-ctx.Done():
			}
			return
		}
	}
}

func (w *registryWatch) Stop()                          { w.once.Do(w.cancel) }
func (w *registryWatch) ResultChan() <-chan watch.Event { return w.out }
