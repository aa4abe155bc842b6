package server

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// SystemNamespaces exist from the start, as in Kubernetes.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// namespaceTTL bounds how long a known-active namespace is trusted without a read.
const namespaceTTL = 2 * time.Second

// namespaces admits creates into live namespaces and empties namespaces being deleted.
type namespaces struct {
	s    *Server
	res  *scheme.Resource
	kick chan struct{}

	mu     sync.Mutex
	active map[string]time.Time // name -> when it was last seen active
}

func newNamespaces(s *Server) *namespaces {
	r, _ := scheme.Lookup("namespaces")
	return &namespaces{s: s, res: r, kick: make(chan struct{}, 1), active: map[string]time.Time{}}
}

// admit allows a create into ns only when ns exists and is not terminating.
func (n *namespaces) admit(ctx context.Context, ns string) error {
	n.mu.Lock()
	seen, ok := n.active[ns]
	n.mu.Unlock()
	if ok && n.s.cfg.Now().Sub(seen) < namespaceTTL {
		return nil
	}
	obj, _, err := n.s.read(ctx, target{res: n.res, name: ns})
	if errors.Is(err, apierror.ErrNotFound) {
		return apierror.NotFound("", "namespaces", ns)
	}
	if err != nil {
		return err
	}
	if obj.(*corev1.Namespace).DeletionTimestamp != nil {
		return apierror.New(apierror.ErrForbidden, "unable to create new content in namespace %s because it is being terminated", ns)
	}
	n.mu.Lock()
	n.active[ns] = n.s.cfg.Now()
	n.mu.Unlock()
	return nil
}

// changed is told about every namespace write.
func (n *namespaces) changed(obj runtime.Object) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return
	}
	n.mu.Lock()
	delete(n.active, ns.Name)
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// ensureSystem creates the system namespaces that are missing.
func (n *namespaces) ensureSystem(ctx context.Context) error {
	for _, name := range SystemNamespaces {
		ns := &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: uuid.NewUUID(), CreationTimestamp: metav1.NewTime(n.s.cfg.Now().Truncate(time.Second)),
				Labels: map[string]string{corev1.LabelMetadataName: name}},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}
		data, err := encodeStored(ns, n.res)
		if err != nil {
			return err
		}
		if _, err := n.s.store.Create(ctx, storageKey(n.res, "", name), data); err != nil && !errors.Is(err, storage.ErrKeyExists) {
			return err
		}
	}
	return nil
}

// run creates the system namespaces, then finalizes terminating namespaces until ctx ends.
func (n *namespaces) run(ctx context.Context) error {
	for {
		err := n.ensureSystem(ctx)
		if err == nil {
			break
		}
		n.s.log.Warn("creating system namespaces", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		n.finalizeAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-n.kick:
		}
	}
}

func (n *namespaces) finalizeAll(ctx context.Context) {
	items, _, _, err := n.s.listObjects(ctx, target{res: n.res}, matchAll, 0, "", 0)
	if err != nil {
		n.s.log.Warn("listing namespaces", "err", err)
		return
	}
	for _, item := range items {
		ns := item.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		if err := n.finalize(ctx, ns); err != nil {
			n.s.log.Warn("finalizing namespace", "namespace", ns.Name, "err", err)
		}
	}
}

// finalize deletes everything in a terminating namespace; once it is empty, the namespace goes.
func (n *namespaces) finalize(ctx context.Context, ns *corev1.Namespace) error {
	remaining := 0
	for _, r := range scheme.Resources {
		if !r.Namespaced {
			continue
		}
		items, _, _, err := n.s.listObjects(ctx, target{res: r, namespace: ns.Name}, matchAll, 0, "", 0)
		if err != nil {
			return err
		}
		for _, item := range items {
			m, _ := metaOf(item)
			remaining++
			if m.GetDeletionTimestamp() != nil {
				continue
			}
			_, _, err := n.s.deleteObject(ctx, target{res: r, namespace: ns.Name, name: m.GetName()}, metav1.DeleteOptions{})
			if err != nil && !errors.Is(err, apierror.ErrNotFound) {
				return err
			}
		}
	}
	if remaining > 0 {
		// Deleted objects may still be going away gracefully; look again soon.
		select {
		case n.kick <- struct{}{}:
		default:
		}
		time.Sleep(200 * time.Millisecond)
		return nil
	}
	_, kv, err := n.s.read(ctx, target{res: n.res, name: ns.Name})
	if err != nil {
		return err
	}
	_, _, err = n.s.store.Delete(ctx, kv.Key, kv.ModRevision)
	if errors.Is(err, storage.ErrKeyNotFound) || errors.Is(err, storage.ErrRevisionMismatch) {
		return nil
	}
	return err
}
