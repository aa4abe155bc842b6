package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// protectedNamespaces may not be deleted, as in Kubernetes.
var protectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// deleteOptions reads DeleteOptions from the body (if any) and the query.
func deleteOptions(c *gin.Context) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	data, err := readPatch(c)
	if err != nil {
		return opts, err
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &opts); err != nil {
			return opts, apierror.New(apierror.ErrBadRequest, "the DeleteOptions in the body could not be decoded: %v", err)
		}
	}
	if g := c.Query("gracePeriodSeconds"); g != "" {
		v, err := strconv.ParseInt(g, 10, 64)
		if err != nil {
			return opts, apierror.New(apierror.ErrBadRequest, "gracePeriodSeconds must be an integer, not %q", g)
		}
		opts.GracePeriodSeconds = &v
	}
	if p := c.Query("propagationPolicy"); p != "" {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	if d, err := dryRun(c); err != nil {
		return opts, err
	} else if d {
		opts.DryRun = []string{"All"}
	}
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		return opts, apierror.New(apierror.ErrBadRequest, "gracePeriodSeconds must not be negative")
	}
	if p := opts.PropagationPolicy; p != nil {
		switch *p {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			return opts, apierror.New(apierror.ErrBadRequest, "propagationPolicy must be Orphan, Background or Foreground, not %q", *p)
		}
	}
	return opts, nil
}

func (s *Server) delete(c *gin.Context, t target) {
	opts, err := deleteOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	out, code, err := s.deleteObject(c.Request.Context(), t, opts)
	if err != nil {
		writeError(c, err)
		return
	}
	s.respond(c, code, out)
}

// gracePeriod is how long an object may take to go away; 0 deletes at once.
func gracePeriod(obj runtime.Object, opts metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	// A pod no kubelet runs, or that has finished, has nothing to stop.
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

// waitsForNamespaceFinalize reports whether a namespace still has content to remove.
func waitsForNamespaceFinalize(obj runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

// deleteObject deletes, or marks for deletion, the object a target names.
func (s *Server) deleteObject(ctx context.Context, t target, opts metav1.DeleteOptions) (runtime.Object, int, error) {
	if t.res.Plural == "namespaces" && protectedNamespaces[t.name] {
		return nil, 0, apierror.New(apierror.ErrForbidden, "namespaces %q is forbidden: this namespace may not be deleted", t.name)
	}
	dry := len(opts.DryRun) > 0
	for attempt := 0; attempt < maxRetries; attempt++ {
		obj, kv, err := s.read(ctx, t)
		if err != nil {
			return nil, 0, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, 0, err
		}
		if pre := opts.Preconditions; pre != nil {
			if pre.UID != nil && *pre.UID != m.GetUID() {
				return nil, 0, apierror.Conflict(t.res.GVK.Group, t.res.Plural, t.name, "Precondition failed: UID in precondition: "+string(*pre.UID)+", UID in object meta: "+string(m.GetUID()))
			}
			if pre.ResourceVersion != nil && *pre.ResourceVersion != m.GetResourceVersion() {
				return nil, 0, apierror.Conflict(t.res.GVK.Group, t.res.Plural, t.name, "Precondition failed: ResourceVersion in precondition: "+*pre.ResourceVersion+", ResourceVersion in object meta: "+m.GetResourceVersion())
			}
		}
		grace := gracePeriod(obj, opts)
		if grace > 0 || len(m.GetFinalizers()) > 0 || waitsForNamespaceFinalize(obj) {
			out, code, err := s.markDeleted(ctx, t, obj, kv, grace, dry)
			if errors.Is(err, errRetry) {
				continue
			}
			return out, code, err
		}
		if dry {
			return obj, http.StatusOK, nil
		}
		_, rev, err := s.store.Delete(ctx, storageKey(t.res, t.namespace, t.name), kv.ModRevision)
		if errors.Is(err, storage.ErrRevisionMismatch) {
			continue
		}
		if errors.Is(err, storage.ErrKeyNotFound) {
			return nil, 0, notFound(t)
		}
		if err != nil {
			return nil, 0, storeErr(err)
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		s.alloc.released(ctx, obj, nil)
		return obj, http.StatusOK, nil
	}
	return nil, 0, apierror.Conflict(t.res.GVK.Group, t.res.Plural, t.name, "too many concurrent writes; try again")
}

// markDeleted sets deletionTimestamp (graceful deletion, finalizers, namespace termination).
// A second delete may only shorten a grace period.
func (s *Server) markDeleted(ctx context.Context, t target, obj runtime.Object, kv storage.KV, grace int64, dry bool) (runtime.Object, int, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, 0, err
	}
	now := s.cfg.Now()
	if cur := m.GetDeletionGracePeriodSeconds(); m.GetDeletionTimestamp() != nil && (cur == nil || *cur <= grace) {
		return obj, http.StatusOK, nil
	}
	ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
	m.SetDeletionTimestamp(&ts)
	m.SetDeletionGracePeriodSeconds(&grace)
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	if dry {
		return obj, http.StatusOK, nil
	}
	stored, err := encodeStored(obj, t.res)
	if err != nil {
		return nil, 0, err
	}
	rev, err := s.store.Update(ctx, storageKey(t.res, t.namespace, t.name), stored, kv.ModRevision)
	if errors.Is(err, storage.ErrRevisionMismatch) {
		return nil, 0, errRetry
	}
	if errors.Is(err, storage.ErrKeyNotFound) {
		return nil, 0, notFound(t)
	}
	if err != nil {
		return nil, 0, storeErr(err)
	}
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	s.afterWrite(t, obj)
	return obj, http.StatusOK, nil
}

func (s *Server) deleteCollection(c *gin.Context, t target) {
	opts, err := deleteOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	sel, err := parseSelectors(c, t)
	if err != nil {
		writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	items, _, _, err := s.listObjects(ctx, t, sel, 0, "", 0)
	if err != nil {
		writeError(c, err)
		return
	}
	var deleted []runtime.Object
	for _, item := range items {
		m, _ := meta.Accessor(item)
		it := target{res: t.res, namespace: m.GetNamespace(), name: m.GetName()}
		out, _, err := s.deleteObject(ctx, it, opts)
		if errors.Is(err, apierror.ErrNotFound) {
			continue
		}
		if err != nil {
			writeError(c, err)
			return
		}
		deleted = append(deleted, out)
	}
	list := t.res.NewList()
	if err := meta.SetList(list, deleted); err != nil {
		writeError(c, err)
		return
	}
	list.GetObjectKind().SetGroupVersionKind(t.res.GVK.GroupVersion().WithKind(t.res.GVK.Kind + "List"))
	s.respond(c, http.StatusOK, list)
}
