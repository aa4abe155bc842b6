package registry

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// UpdateFunc computes the new object from the current one (a deep copy the function may
// change and return) and its stored form. precondition is the resourceVersion the caller
// requires the current object to have ("" for none): with one, losing a race is a Conflict;
// without, the registry re-reads and calls the function again.
type UpdateFunc func(current runtime.Object, stored storage.KV) (obj runtime.Object, precondition string, err error)

// UpdateOptions say which endpoint an update came through.
type UpdateOptions struct {
	// Subresource is "" for the main endpoint, "status" (only status changes),
	// "ephemeralcontainers" (only a pod's ephemeral containers change), or "binding" (the
	// server itself assigns a pod, status included).
	Subresource string
	DryRun      bool
}

// Update replaces the object k names with what fn makes of it.
func (r *Registry) Update(ctx context.Context, k Key, opts UpdateOptions, fn UpdateFunc) (Written, error) {
	for attempt := 0; attempt < maxRetries; attempt++ {
		old, kv, err := r.Read(ctx, k)
		if err != nil {
			return Written{}, err
		}
		obj, precondition, err := fn(old.DeepCopyObject(), kv)
		if err != nil {
			return Written{}, err
		}
		out, err := r.commitUpdate(ctx, k, old, kv, obj, precondition, opts)
		if errors.Is(err, errRetry) {
			continue
		}
		return out, err
	}
	return Written{}, apierror.Conflict(k.Resource.GVK.Group, k.Resource.Plural, k.Name, "too many concurrent writes; try again")
}

// graceful reports whether an object being deleted is in a grace period, which only a delete
// ends (Kubernetes' shouldDeleteDuringUpdate).
func graceful(m metav1.Object) bool {
	g := m.GetDeletionGracePeriodSeconds()
	return g != nil && *g > 0
}

var errRetry = errors.New("lost a write race; retry")

// ConflictModified is the Conflict of a write based on an outdated object.
func ConflictModified(k Key) error {
	return apierror.Conflict(k.Resource.GVK.Group, k.Resource.Plural, k.Name, "the object has been modified; please apply your changes to the latest version and try again")
}

// guardedWriteErr maps the failure of a write guarded by the revision read: a lost race is a
// Conflict with a precondition, errRetry without; a key gone is NotFound.
func (r *Registry) guardedWriteErr(k Key, precondition string, err error) error {
	switch {
	case errors.Is(err, storage.ErrRevisionMismatch) && precondition != "":
		return ConflictModified(k)
	case errors.Is(err, storage.ErrRevisionMismatch):
		return errRetry
	case errors.Is(err, storage.ErrKeyNotFound):
		return notFound(k)
	}
	return storeErr(err)
}

// commitUpdate writes obj over old (read at kv).
func (r *Registry) commitUpdate(ctx context.Context, k Key, old runtime.Object, kv storage.KV, obj runtime.Object, precondition string, opts UpdateOptions) (Written, error) {
	res := k.Resource
	st := r.strategy(res)
	if precondition != "" {
		rv, err := strconv.ParseInt(precondition, 10, 64)
		if err != nil {
			return Written{}, invalid(res, k.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), precondition, "must be an integer")})
		}
		if rv != kv.ModRevision {
			return Written{}, ConflictModified(k)
		}
	}
	om, err := metaOf(old)
	if err != nil {
		return Written{}, err
	}
	switch opts.Subresource {
	case "status":
		// Only status comes from the client; everything else stays as stored.
		status := obj
		obj = old.DeepCopyObject()
		copyField(obj, status, "Status")
	case "ephemeralcontainers":
		// Only the pod's ephemeral containers come from the client.
		next, ok := obj.(*corev1.Pod)
		if !ok {
			return Written{}, apierror.New(apierror.ErrInternal, "ephemeral containers of a %T", obj)
		}
		pod := old.DeepCopyObject().(*corev1.Pod)
		pod.Spec.EphemeralContainers = next.Spec.EphemeralContainers
		obj = pod
	case "binding":
		// The server writes bindings itself, status included.
	default:
		st.Canonicalize(obj)
		st.PrepareForUpdate(obj, old)
	}
	m, err := metaOf(obj)
	if err != nil {
		return Written{}, err
	}
	if opts.Subresource != "status" {
		// Clients may not change identity or deletion bookkeeping.
		m.SetUID(om.GetUID())
		m.SetCreationTimestamp(om.GetCreationTimestamp())
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
		m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
		m.SetGenerateName(om.GetGenerateName())
		m.SetGeneration(om.GetGeneration())
		if specChanged(obj, old) {
			m.SetGeneration(om.GetGeneration() + 1)
		}
	}
	m.SetName(om.GetName())
	m.SetNamespace(om.GetNamespace())
	m.SetSelfLink("")
	st.DefaultUpdate(obj, old)
	if r.admit != nil {
		if err := r.admit(admitting(ctx, opts.DryRun), OpUpdate, k, opts.Subresource, obj, old); err != nil {
			return Written{}, err
		}
	}
	written := false
	if !opts.DryRun && opts.Subresource == "" {
		undo, err := st.Allocate(ctx, old, obj)
		if err != nil {
			return Written{}, err
		}
		defer func() {
			if written {
				st.Release(ctx, old, obj)
			} else {
				undo()
			}
		}()
	}
	// An update is validated as one (the whole new object, then what may not change), each
	// error once; a binding only sets the node, and is checked as the object it makes.
	var errs field.ErrorList
	if opts.Subresource == "binding" {
		errs = st.Validate(obj)
	} else {
		errs = append(st.ValidateUpdate(obj, old), st.ValidateVersion(k.Served, obj, old)...)
	}
	if len(errs) > 0 {
		return Written{}, invalid(res, k.Name, errs)
	}
	if err := r.callAdmitValidated(ctx, opts.DryRun, OpUpdate, k, opts.Subresource, obj, old); err != nil {
		return Written{}, err
	}
	if opts.Subresource == "" {
		release, err := r.admitValid(ctx, OpUpdate, k, obj, old, opts.DryRun)
		if err != nil {
			return Written{}, err
		}
		defer func() {
			if !written {
				release()
			}
		}()
	}
	key := storageKey(k)
	if om.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && !st.Finalizing(obj) && !graceful(om) {
		// The last finalizer is gone from an object being deleted: delete it now. An object
		// in its grace period (a pod whose kubelet stops it) stays until its deletion.
		if opts.DryRun {
			return Written{Object: obj}, nil
		}
		_, rev, err := r.store.Delete(ctx, key, kv.ModRevision)
		if err != nil {
			return Written{}, r.guardedWriteErr(k, precondition, err)
		}
		m.SetResourceVersion(formatRV(rev))
		st.Release(ctx, old, nil)
		r.afterWrite(ctx, k, obj, false)
		return Written{Object: obj}, nil
	}
	stored, err := EncodeStored(obj, res)
	if err != nil {
		return Written{}, err
	}
	if bytes.Equal(stored, kv.Value) {
		// Nothing changed: no write, no new revision, no event.
		m.SetResourceVersion(formatRV(kv.ModRevision))
		return Written{Object: obj, Stored: kv.Value, Revision: kv.ModRevision}, nil
	}
	if opts.DryRun {
		return Written{Object: obj}, nil
	}
	rev, err := r.store.Update(ctx, key, stored, kv.ModRevision)
	if err != nil {
		return Written{}, r.guardedWriteErr(k, precondition, err)
	}
	written = true
	m.SetResourceVersion(formatRV(rev))
	r.afterWrite(ctx, k, obj, false)
	return Written{Object: obj, Stored: stored, Revision: rev}, nil
}
