package registry

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// WatchEvent is one change as a selector-filtered watcher sees it. Type is empty for a change
// the watcher does not see; it still moves Revision on.
type WatchEvent struct {
	Type     watch.EventType
	Object   runtime.Object
	Revision int64
}

// WatchBatch is a batch of events, or the error that ends a watch (a Gone error when the
// start revision was compacted).
type WatchBatch struct {
	Events []WatchEvent
	Err    error
}

// Watch streams the changes of a collection after revision rev, as seen through sel: an object
// that starts matching is ADDED, one that stops matching is DELETED. The channel closes when
// ctx ends or after an error.
func (r *Registry) Watch(ctx context.Context, k Key, sel Selectors, rev int64) <-chan WatchBatch {
	in := r.store.Watch(ctx, storagePrefix(k.Resource, k.Namespace), rev)
	out := make(chan WatchBatch)
	go func() {
		defer close(out)
		for res := range in {
			var b WatchBatch
			if res.Err != nil {
				if errors.Is(res.Err, storage.ErrCompacted) {
					b.Err = apierror.New(apierror.ErrGone, "too old resource version: %d", rev)
				} else {
					b.Err = storeErr(res.Err)
				}
			}
			for _, ev := range res.Events {
				typ, obj, err := r.translate(k, sel, ev)
				if err != nil {
					r.log.Warn("watch: undecodable object", "key", ev.KV.Key, "err", err)
				}
				b.Events = append(b.Events, WatchEvent{Type: typ, Object: obj, Revision: ev.Revision})
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if b.Err != nil {
				return
			}
		}
	}()
	return out
}

// translate turns a storage change into the event a selector-filtered watcher sees.
func (r *Registry) translate(k Key, sel Selectors, ev storage.Event) (watch.EventType, runtime.Object, error) {
	obj, err := r.Decode(k.Resource, ev.KV.Value, ev.Revision)
	if err != nil {
		return "", nil, err
	}
	if ev.Type == storage.Delete {
		if r.Matches(k.Resource, sel, obj) {
			return watch.Deleted, obj, nil
		}
		return "", nil, nil
	}
	cur := r.Matches(k.Resource, sel, obj)
	prev := false
	if ev.PrevKV != nil && !ev.Created {
		if p, err := r.Decode(k.Resource, ev.PrevKV.Value, ev.PrevKV.ModRevision); err == nil {
			prev = r.Matches(k.Resource, sel, p)
		}
	}
	switch {
	case cur && prev:
		return watch.Modified, obj, nil
	case cur:
		return watch.Added, obj, nil
	case prev:
		return watch.Deleted, obj, nil
	}
	return "", nil, nil
}
