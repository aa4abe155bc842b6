package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/apiserver/internal/authorizer/node"
	"minik8s.io/apiserver/internal/authorizer/rbac"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
)

// Config is what Access needs.
type Config struct {
	// Source lists and watches the registry (registry.Source).
	Source informer.Source
	// NodeRules are what every node may do beyond the objects the Node authorizer decides on
	// one by one.
	NodeRules []rbacv1.PolicyRule
	Logger    *slog.Logger
}

// Access decides on requests. Build it with New, run Start, and wait for HasSynced.
type Access struct {
	factory *informer.Factory
	rbac    *rbac.Authorizer
	// decisions caches RBAC's decisions until a role or binding changes.
	decisions *rbac.DecisionCache
	node      *node.Authorizer
	chain     authorizer.Chain

	roles               informer.Lister[*rbacv1.Role]
	roleBindings        informer.Lister[*rbacv1.RoleBinding]
	clusterRoles        informer.Lister[*rbacv1.ClusterRole]
	clusterRoleBindings informer.Lister[*rbacv1.ClusterRoleBinding]
	pods                informer.Lister[*corev1.Pod]
	pvcs                informer.Lister[*corev1.PersistentVolumeClaim]
	pvs                 informer.Lister[*corev1.PersistentVolume]
	serviceAccounts     informer.Lister[*corev1.ServiceAccount]
	secrets             informer.Lister[*corev1.Secret]
	nodes               informer.Lister[*corev1.Node]

	bindings snapshot
}

// snapshot holds the bindings indexed by subject as RBAC reads them on every request,
// rebuilt only after one changed: listing them from the caches each time would copy every
// binding per request, and walking them all would cost each request a look at every one.
type snapshot struct {
	dirty atomic.Bool
	mu    sync.Mutex
	cur   atomic.Pointer[rbac.BindingIndex]
}

// get returns the current bindings, rebuilding them first if one changed since.
func (s *snapshot) get(a *Access) *rbac.BindingIndex {
	if !s.dirty.Load() {
		if cur := s.cur.Load(); cur != nil {
			return cur
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.cur.Load(); cur != nil && !s.dirty.Load() {
		return cur
	}
	// Cleared before reading, so a change made while rebuilding marks it again.
	s.dirty.Store(false)
	crbs, _ := a.clusterRoleBindings.List(nil)
	rbs, _ := a.roleBindings.List(nil)
	x := rbac.NewBindingIndex(crbs, rbs)
	s.cur.Store(x)
	return x
}

// New builds the caches and the chain; it starts nothing.
func New(cfg Config) *Access {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := informer.NewFactory(cfg.Source, informer.FactoryConfig{Watch: true, Logger: cfg.Logger})
	a := &Access{factory: f}
	rInf := f.For("roles", nil)
	a.roles = informer.NewLister[*rbacv1.Role](rInf.Store())
	rbInf := f.For("rolebindings", nil)
	a.roleBindings = informer.NewLister[*rbacv1.RoleBinding](rbInf.Store())
	crInf := f.For("clusterroles", nil)
	a.clusterRoles = informer.NewLister[*rbacv1.ClusterRole](crInf.Store())
	crbInf := f.For("clusterrolebindings", nil)
	a.clusterRoleBindings = informer.NewLister[*rbacv1.ClusterRoleBinding](crbInf.Store())
	a.bindings.dirty.Store(true)
	bindingChanged := func(runtime.Object) { a.bindings.dirty.Store(true); a.decisions.Invalidate() }
	roleChanged := func(runtime.Object) { a.decisions.Invalidate() }
	for inf, changed := range map[*informer.Informer]func(runtime.Object){rbInf: bindingChanged, crbInf: bindingChanged, rInf: roleChanged, crInf: roleChanged} {
		inf.AddEventHandler(informer.HandlerFuncs{AddFunc: changed, DeleteFunc: changed,
			UpdateFunc: func(_, obj runtime.Object) { changed(obj) }})
	}
	a.pods = informer.NewLister[*corev1.Pod](f.Pods().Store())
	a.pvcs = informer.NewLister[*corev1.PersistentVolumeClaim](f.For(informer.PersistentVolumeClaims, nil).Store())
	a.pvs = informer.NewLister[*corev1.PersistentVolume](f.For(informer.PersistentVolumes, nil).Store())
	a.serviceAccounts = informer.NewLister[*corev1.ServiceAccount](f.For("serviceaccounts", nil).Store())
	a.secrets = informer.NewLister[*corev1.Secret](f.For("secrets", nil).Store())
	a.nodes = informer.NewLister[*corev1.Node](f.Nodes().Store())
	l := listers{a}
	a.rbac = rbac.New(l, l, l)
	a.decisions = rbac.NewDecisionCache(a.rbac)
	a.node = node.New(graph{a}, cfg.NodeRules)
	chain, err := authorizer.NewChain(
		authorizer.Named{Name: "privileged", Authorizer: authorizer.PrivilegedGroups{authorizer.SystemPrivilegedGroup}},
		authorizer.Named{Name: "node", Authorizer: a.node},
		authorizer.Named{Name: "rbac", Authorizer: a.decisions},
	)
	if err != nil {
		panic(err) // the names above are fixed and distinct
	}
	a.chain = chain
	return a
}

// Start keeps the caches until ctx ends.
func (a *Access) Start(ctx context.Context) error { return a.factory.Start(ctx) }

// HasSynced reports whether every cache has listed once: before that, decisions would refuse
// what the policy allows.
func (a *Access) HasSynced() bool { return a.factory.HasSynced() }

// Authorize runs the chain.
func (a *Access) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	return a.chain.Authorize(ctx, attrs)
}

// RulesFor lists what u may do in namespace, for SelfSubjectRulesReview: system:masters'
// everything, a node's rules, and RBAC's.
func (a *Access) RulesFor(ctx context.Context, u authorizer.User, namespace string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	return authorizer.RuleResolvers{a.node, a.rbac}.RulesFor(ctx, u, namespace)
}

// RBAC is the RBAC resolver, for the escalation checks on role and binding writes.
func (a *Access) RBAC() *rbac.Resolver { return a.rbac.Resolver() }

// Pod, ServiceAccount, Secret and Node read the caches, for the liveness checks of
// ServiceAccount tokens; a missing object is an apierror.ErrNotFound.
func (a *Access) Pod(ns, name string) (*corev1.Pod, error) { return a.pods.Get(ns, name) }

func (a *Access) ServiceAccount(ns, name string) (*corev1.ServiceAccount, error) {
	return a.serviceAccounts.Get(ns, name)
}

func (a *Access) Secret(ns, name string) (*corev1.Secret, error) { return a.secrets.Get(ns, name) }

func (a *Access) Node(name string) (*corev1.Node, error) { return a.nodes.Get("", name) }

// listers reads RBAC objects from the caches, with Kubernetes' not-found wording (it ends up
// in the reasons of refusals).
type listers struct{ a *Access }

func notFound(resource, name string, err error) error {
	if errors.Is(err, apierror.ErrNotFound) {
		return fmt.Errorf("%s.rbac.authorization.k8s.io %q not found", resource, name)
	}
	return err
}

func (l listers) GetRole(ns, name string) (*rbacv1.Role, error) {
	r, err := l.a.roles.Get(ns, name)
	return r, notFound("role", name, err)
}

func (l listers) RoleBindingsFor(u authorizer.User, ns string) ([]*rbacv1.RoleBinding, error) {
	return l.a.bindings.get(l.a).RoleBindingsFor(u, ns)
}

func (l listers) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	r, err := l.a.clusterRoles.Get("", name)
	return r, notFound("clusterrole", name, err)
}

func (l listers) ClusterRoleBindingsFor(u authorizer.User) ([]*rbacv1.ClusterRoleBinding, error) {
	return l.a.bindings.get(l.a).ClusterRoleBindingsFor(u)
}

// graph is the Node authorizer's view of pods and volumes.
type graph struct{ a *Access }

func (g graph) PodsOnNode(name string) ([]*corev1.Pod, error) {
	return g.a.pods.ByIndex(informer.PodNodeIndex, name)
}

func (g graph) PersistentVolumeClaim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	return g.a.pvcs.Get(ns, name)
}

func (g graph) PersistentVolume(name string) (*corev1.PersistentVolume, error) {
	return g.a.pvs.Get("", name)
}
