package registry

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// SystemNamespaces exist from the start, as in Kubernetes.
var SystemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// DefaultServiceAccount is the service account every namespace has and pods run as unless
// they name another.
const DefaultServiceAccount = "default"

const (
	// namespaceTTL bounds how long a known-active namespace is trusted without a read.
	namespaceTTL = 2 * time.Second
	// lifecyclePeriod spaces full passes over the namespaces: finalizing terminating ones,
	// and giving every active one its default service account back if it was deleted.
	lifecyclePeriod = 5 * time.Second
)

// namespaces admits creates into live namespaces, gives each namespace its default service
// account, and empties namespaces being deleted. Kubernetes runs the last two in its
// controller-manager; here the apiserver does, as it already owns the namespace lifecycle.
type namespaces struct {
	r     *Registry
	res   *scheme.Resource
	saRes *scheme.Resource
	kick  chan struct{}

	mu     sync.Mutex
	active map[string]time.Time // name -> when it was last seen active
	// hasAccount holds the namespaces known to have their default service account, so a
	// pass looks up only the others.
	hasAccount map[string]bool
}

func newNamespaces(r *Registry) *namespaces {
	res, _ := scheme.Lookup("namespaces")
	sa, _ := scheme.Lookup("serviceaccounts")
	return &namespaces{r: r, res: res, saRes: sa, kick: make(chan struct{}, 1), active: map[string]time.Time{}, hasAccount: map[string]bool{}}
}

// admit allows a create into ns only when ns exists and is not terminating.
func (n *namespaces) admit(ctx context.Context, ns string) error {
	n.mu.Lock()
	seen, ok := n.active[ns]
	n.mu.Unlock()
	if ok && n.r.now().Sub(seen) < namespaceTTL {
		return nil
	}
	obj, _, err := n.r.Read(ctx, Key{Resource: n.res, Name: ns})
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
	n.active[ns] = n.r.now()
	n.mu.Unlock()
	return nil
}

func (n *namespaces) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// changed is told about every namespace write. A new namespace gets its default service
// account at once, so pods created right after it find one.
func (n *namespaces) changed(ctx context.Context, obj runtime.Object, created bool) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	if created {
		if err := n.ensureServiceAccount(ctx, ns.Name); err != nil {
			n.r.log.Warn("creating the default service account", "namespace", ns.Name, "err", err)
			n.wake()
		}
		return
	}
	if ns.DeletionTimestamp == nil {
		return
	}
	n.mu.Lock()
	delete(n.active, ns.Name)
	delete(n.hasAccount, ns.Name)
	n.mu.Unlock()
	n.wake()
}

// serviceAccountChanged is told about every service account write: a deleted default one
// comes back on the next pass.
func (n *namespaces) serviceAccountChanged(k Key, obj runtime.Object) {
	if m, err := metaOf(obj); err == nil && k.Name == DefaultServiceAccount && m.GetDeletionTimestamp() == nil {
		n.mu.Lock()
		delete(n.hasAccount, k.Namespace)
		n.mu.Unlock()
		n.wake()
	}
}

func (n *namespaces) ensureServiceAccount(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceAccount, Namespace: ns}}
	_, err := n.r.Create(ctx, Key{Resource: n.saRes, Namespace: ns}, sa, false)
	switch {
	case err == nil, errors.Is(err, apierror.ErrAlreadyExists):
		n.mu.Lock()
		n.hasAccount[ns] = true
		n.mu.Unlock()
		return nil
	case errors.Is(err, apierror.ErrNotFound), errors.Is(err, apierror.ErrForbidden):
		// The namespace is gone or going.
		return nil
	}
	return err
}

// ensureSystem creates the system namespaces that are missing.
func (n *namespaces) ensureSystem(ctx context.Context) error {
	for _, name := range SystemNamespaces {
		ns := &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		}
		_, err := n.r.Create(ctx, Key{Resource: n.res}, ns, false)
		if err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
			return err
		}
	}
	return nil
}

// run creates the system namespaces, then keeps namespaces' lifecycle until ctx ends.
func (n *namespaces) run(ctx context.Context) error {
	for {
		err := n.ensureSystem(ctx)
		if err == nil {
			break
		}
		n.r.log.Warn("creating system namespaces", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	tick := time.NewTicker(lifecyclePeriod)
	defer tick.Stop()
	for {
		n.pass(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-n.kick:
		}
	}
}

// pass finalizes terminating namespaces and gives active ones not known to have their default
// service account one (a create that finds it there only records that).
func (n *namespaces) pass(ctx context.Context) {
	list, err := n.r.List(ctx, Key{Resource: n.res}, ListOptions{})
	if err != nil {
		n.r.log.Warn("listing namespaces", "err", err)
		return
	}
	for _, item := range list.Items {
		ns := item.(*corev1.Namespace)
		if ns.DeletionTimestamp != nil {
			if err := n.finalize(ctx, ns); err != nil {
				n.r.log.Warn("finalizing namespace", "namespace", ns.Name, "err", err)
			}
			continue
		}
		n.mu.Lock()
		has := n.hasAccount[ns.Name]
		n.mu.Unlock()
		if !has {
			if err := n.ensureServiceAccount(ctx, ns.Name); err != nil {
				n.r.log.Warn("creating the default service account", "namespace", ns.Name, "err", err)
			}
		}
	}
}

var background = metav1.DeletePropagationBackground

// finalize deletes everything in a terminating namespace; once it is empty, the namespace goes.
func (n *namespaces) finalize(ctx context.Context, ns *corev1.Namespace) error {
	remaining := 0
	for _, res := range n.r.StoredResources() {
		if !res.Namespaced {
			continue
		}
		list, err := n.r.List(ctx, Key{Resource: res, Namespace: ns.Name}, ListOptions{})
		if err != nil {
			return err
		}
		for _, item := range list.Items {
			m, _ := metaOf(item)
			remaining++
			if m.GetDeletionTimestamp() != nil {
				continue
			}
			// In the background, as Kubernetes' namespace controller: a Job's default would
			// orphan (a finalizer only the garbage collector removes).
			_, err := n.r.Delete(ctx, Key{Resource: res, Namespace: ns.Name, Name: m.GetName()}, &metav1.DeleteOptions{PropagationPolicy: &background})
			if err != nil && !errors.Is(err, apierror.ErrNotFound) {
				return err
			}
		}
	}
	if remaining > 0 {
		// Deleted objects may still be going away gracefully; look again soon.
		n.wake()
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		return nil
	}
	kv, err := n.r.Get(ctx, Key{Resource: n.res, Name: ns.Name})
	if err != nil {
		return err
	}
	_, _, err = n.r.store.Delete(ctx, kv.Key, kv.ModRevision)
	if errors.Is(err, storage.ErrKeyNotFound) || errors.Is(err, storage.ErrRevisionMismatch) {
		return nil
	}
	return err
}
