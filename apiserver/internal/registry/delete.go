package registry

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// Delete deletes the object k names, or marks it for deletion when it has a grace period,
// finalizers, or content to finalize. It returns the object as it was deleted or marked.
func (r *Registry) Delete(ctx context.Context, k Key, opts *metav1.DeleteOptions) (runtime.Object, error) {
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	st := r.strategy(k.Resource)
	if err := st.CheckDelete(k.Name); err != nil {
		return nil, err
	}
	dry := len(opts.DryRun) > 0
	for attempt := 0; attempt < maxRetries; attempt++ {
		obj, kv, err := r.Read(ctx, k)
		if err != nil {
			return nil, err
		}
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		if err := checkPreconditions(k, m, opts.Preconditions); err != nil {
			return nil, err
		}
		if r.admit != nil && attempt == 0 {
			if err := r.admit(admitting(ctx, dry), OpDelete, k, "", nil, obj); err != nil {
				return nil, err
			}
		}
		if attempt == 0 {
			if err := r.callAdmitValidated(ctx, dry, OpDelete, k, "", nil, obj); err != nil {
				return nil, err
			}
		}
		grace := st.GracePeriod(obj, opts)
		_, finalizers := gcFinalizers(st.GCPolicy(), m.GetFinalizers(), opts)
		if grace > 0 || len(finalizers) > 0 || st.Finalizing(obj) {
			out, err := r.markDeleted(ctx, k, obj, kv, grace, finalizers, dry)
			if errors.Is(err, errRetry) {
				continue
			}
			return out, err
		}
		if dry {
			return obj, nil
		}
		_, rev, err := r.store.Delete(ctx, storageKey(k), kv.ModRevision)
		if errors.Is(err, storage.ErrRevisionMismatch) {
			continue
		}
		if errors.Is(err, storage.ErrKeyNotFound) {
			return nil, notFound(k)
		}
		if err != nil {
			return nil, storeErr(err)
		}
		m.SetResourceVersion(formatRV(rev))
		st.Release(ctx, obj, nil)
		r.afterWrite(ctx, k, obj, false)
		return obj, nil
	}
	return nil, apierror.Conflict(k.Resource.GVK.Group, k.Resource.Plural, k.Name, "too many concurrent writes; try again")
}

func checkPreconditions(k Key, m metav1.Object, pre *metav1.Preconditions) error {
	if pre == nil {
		return nil
	}
	if pre.UID != nil && *pre.UID != m.GetUID() {
		return apierror.Conflict(k.Resource.GVK.Group, k.Resource.Plural, k.Name, "Precondition failed: UID in precondition: "+string(*pre.UID)+", UID in object meta: "+string(m.GetUID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
		return apierror.Conflict(k.Resource.GVK.Group, k.Resource.Plural, k.Name, "Precondition failed: ResourceVersion in precondition: "+*pre.ResourceVersion+", ResourceVersion in object meta: "+m.GetResourceVersion())
	}
	return nil
}

// markDeleted sets deletionTimestamp (graceful deletion, finalizers, namespace termination)
// and the finalizers the deletion options call for (orphan, foregroundDeletion). While a
// graceful deletion is under way a second delete may only shorten its grace period, and
// changes no finalizers, as in Kubernetes.
func (r *Registry) markDeleted(ctx context.Context, k Key, obj runtime.Object, kv storage.KV, grace int64, finalizers []string, dry bool) (runtime.Object, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	changed := false
	cur := m.GetDeletionGracePeriodSeconds()
	switch {
	case m.GetDeletionTimestamp() == nil:
		changed = true
	case cur != nil && *cur > 0:
		if grace >= *cur {
			return obj, nil
		}
		changed = true
	default:
		// Being deleted without a grace period (finalizers hold it): only the finalizers
		// may change.
		grace = 0
	}
	if changed {
		ts := metav1.NewTime(r.now().Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		m.SetDeletionTimestamp(&ts)
		m.SetDeletionGracePeriodSeconds(&grace)
		r.strategy(k.Resource).MarkDeleting(obj)
	}
	if !sameSet(finalizers, m.GetFinalizers()) {
		m.SetFinalizers(finalizers)
		changed = true
	}
	if !changed {
		return obj, nil
	}
	if dry {
		return obj, nil
	}
	stored, err := EncodeStored(obj, k.Resource)
	if err != nil {
		return nil, err
	}
	rev, err := r.store.Update(ctx, storageKey(k), stored, kv.ModRevision)
	if errors.Is(err, storage.ErrRevisionMismatch) {
		return nil, errRetry
	}
	if errors.Is(err, storage.ErrKeyNotFound) {
		return nil, notFound(k)
	}
	if err != nil {
		return nil, storeErr(err)
	}
	m.SetResourceVersion(formatRV(rev))
	r.afterWrite(ctx, k, obj, false)
	return obj, nil
}

// DeleteCollection deletes every selected object of a collection, as Delete does each.
func (r *Registry) DeleteCollection(ctx context.Context, k Key, sel Selectors, opts *metav1.DeleteOptions) ([]runtime.Object, error) {
	list, err := r.List(ctx, k, ListOptions{Selectors: sel})
	if err != nil {
		return nil, err
	}
	var deleted []runtime.Object
	for _, item := range list.Items {
		m, err := metaOf(item)
		if err != nil {
			return nil, err
		}
		out, err := r.Delete(ctx, Key{Resource: k.Resource, Namespace: m.GetNamespace(), Name: m.GetName()}, opts)
		if errors.Is(err, apierror.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, out)
	}
	return deleted, nil
}
