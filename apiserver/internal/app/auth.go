package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/access"
	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/apiserver/internal/bootstrap"
	"minik8s.io/apiserver/internal/bootstrappolicy"
	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/server"
	"minik8s.io/apiserver/internal/serviceaccount"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/scheme"
)

// auth is who may call the API and what they may do: the static token file and
// ServiceAccount tokens, the authorization chain over the server's own caches, and the
// bootstrap policy.
type auth struct {
	static    map[string]bootstrap.Identity
	validator *serviceaccount.Validator
	tokens    *server.Tokens
	access    *access.Access // set once the server builds it
	live      *liveObjects
	cache     tokenCache
	policyOK  atomic.Bool
	log       *slog.Logger
	// allowAll authorizes every authenticated request (--authorization-mode AlwaysAllow); the
	// caches still back ServiceAccount tokens and admission.
	allowAll bool
}

// newAuth loads the signing keys and builds the authenticators.
func newAuth(paths *bootstrap.Paths, static map[string]bootstrap.Identity, addr string, log *slog.Logger) (*auth, error) {
	key, err := serviceaccount.ReadPrivateKey(paths.SAKey)
	if err != nil {
		return nil, err
	}
	pubs, err := serviceaccount.ReadPublicKeys(paths.SAPub)
	if err != nil {
		return nil, err
	}
	signer, err := serviceaccount.NewSigner(serviceaccount.DefaultIssuer, key)
	if err != nil {
		return nil, err
	}
	a := &auth{static: static, live: &liveObjects{}, log: log}
	audiences := serviceaccount.DefaultAPIAudiences()
	a.validator, err = serviceaccount.NewValidator(serviceaccount.ValidatorConfig{Keys: pubs, APIAudiences: audiences, Getter: a.live})
	if err != nil {
		return nil, err
	}
	disc, err := serviceaccount.NewDiscovery(serviceaccount.DefaultIssuer, "", addr, pubs)
	if err != nil {
		return nil, err
	}
	a.tokens = &server.Tokens{Signer: signer, APIAudiences: audiences, Discovery: disc,
		Authenticate: a.review}
	return a, nil
}

// authenticate maps a bearer token to its user: the static token file first, then
// ServiceAccount tokens. Every authenticated user is in system:authenticated.
func (a *auth) authenticate(ctx context.Context, token string) (server.Identity, bool) {
	if id, ok := a.static[token]; ok {
		return staticUser(id), true
	}
	if u, ok := a.cache.get(token, time.Now()); ok {
		return u, true
	}
	resp, ok, err := a.validator.Authenticate(ctx, token, nil)
	if err != nil {
		a.log.Debug("service account token refused", "err", err)
	}
	if err != nil || !ok {
		return server.Identity{}, false
	}
	u := authenticated(authorizer.User(resp.User))
	a.cache.put(token, u, time.Now())
	return u, true
}

// tokenTTL is how long a ServiceAccount token, once accepted, is taken without checking its
// signature and bound objects again: Kubernetes' token success cache keeps them 10 s, so a
// token of a deleted pod works at most that much longer.
const tokenTTL = 10 * time.Second

// maxCachedTokens bounds the cache; past it, it starts again empty.
const maxCachedTokens = 10000

// tokenCache remembers accepted ServiceAccount tokens for tokenTTL.
type tokenCache struct {
	mu sync.Mutex
	m  map[string]cachedUser
}

type cachedUser struct {
	u       authorizer.User
	expires time.Time
}

func (c *tokenCache) get(token string, now time.Time) (authorizer.User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[token]
	if !ok || !now.Before(e.expires) {
		return authorizer.User{}, false
	}
	return e.u, true
}

func (c *tokenCache) put(token string, u authorizer.User, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTokens {
		c.m = make(map[string]cachedUser)
	}
	c.m[token] = cachedUser{u: u, expires: now.Add(tokenTTL)}
}

// staticUser is the user of a token file identity.
func staticUser(id bootstrap.Identity) authorizer.User {
	return authenticated(authorizer.User{Name: id.User, UID: id.UID, Groups: slices.Clone(id.Groups)})
}

func authenticated(u authorizer.User) authorizer.User {
	if !slices.Contains(u.Groups, authorizer.AllAuthenticated) {
		u.Groups = append(u.Groups, authorizer.AllAuthenticated)
	}
	return u
}

// review authenticates for TokenReview, with the audiences asked for.
func (a *auth) review(ctx context.Context, token string, audiences []string) (*serviceaccount.Response, bool, error) {
	if resp, ok, err := a.validator.Authenticate(ctx, token, audiences); ok || err != nil {
		return resp, ok, err
	}
	return serviceaccount.AudienceAgnostic(a.validator.APIAudiences(), func(_ context.Context, token string) (*serviceaccount.Response, bool, error) {
		id, ok := a.static[token]
		if !ok {
			return nil, false, nil
		}
		return &serviceaccount.Response{User: serviceaccount.User(staticUser(id))}, true, nil
	})(ctx, token, audiences)
}

// newAccess is the server's NewAccess: the caches and chain over its registry.
func (a *auth) newAccess(src informer.Source) server.Access {
	a.access = access.New(access.Config{Source: src, NodeRules: bootstrappolicy.NodeRules(), Logger: a.log.With("part", "access")})
	a.live.a = a.access
	if a.allowAll {
		return alwaysAllow{a.access}
	}
	return a.access
}

// alwaysAllow is the access of --authorization-mode AlwaysAllow.
type alwaysAllow struct{ *access.Access }

func (alwaysAllow) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.Allow, "", nil
}

// ready is the readiness of authorization: the policy reconciled and the caches read.
func (a *auth) ready(context.Context) error {
	if !a.policyOK.Load() {
		return errors.New("rbac/bootstrap-roles not finished")
	}
	if a.access != nil && !a.access.HasSynced() {
		return errors.New("the authorization caches have not synced")
	}
	return nil
}

// reconcilePolicy writes the bootstrap policy until it is all in place, then again every
// few minutes, so a deleted default comes back.
func (a *auth) reconcilePolicy(ctx context.Context, reg *registry.Registry) error {
	for {
		wait := 5 * time.Minute
		if err := ensurePolicy(ctx, reg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			a.log.Debug("bootstrap policy", "err", err)
			wait = time.Second
		} else if !a.policyOK.Swap(true) {
			a.log.Info("bootstrap policy in place")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

func ensurePolicy(ctx context.Context, reg *registry.Registry) error {
	for _, want := range bootstrappolicy.ClusterRoles() {
		if err := reconcileOne(ctx, reg, "clusterroles", "", want.Name, func(cur runtime.Object) (runtime.Object, bootstrappolicy.Operation) {
			have, _ := cur.(*rbacv1.ClusterRole)
			return bootstrappolicy.ReconcileClusterRole(have, &want)
		}); err != nil {
			return err
		}
	}
	for _, want := range bootstrappolicy.ClusterRoleBindings() {
		if err := reconcileOne(ctx, reg, "clusterrolebindings", "", want.Name, func(cur runtime.Object) (runtime.Object, bootstrappolicy.Operation) {
			have, _ := cur.(*rbacv1.ClusterRoleBinding)
			return bootstrappolicy.ReconcileClusterRoleBinding(have, &want)
		}); err != nil {
			return err
		}
	}
	for ns, roles := range bootstrappolicy.NamespaceRoles() {
		for _, want := range roles {
			if err := reconcileOne(ctx, reg, "roles", ns, want.Name, func(cur runtime.Object) (runtime.Object, bootstrappolicy.Operation) {
				have, _ := cur.(*rbacv1.Role)
				return bootstrappolicy.ReconcileRole(have, &want)
			}); err != nil {
				return err
			}
		}
	}
	// The system PriorityClasses, re-created if deleted; never changed (their values cannot).
	for _, want := range registry.SystemPriorityClasses() {
		if err := reconcileOne(ctx, reg, "priorityclasses", "", want.Name, func(cur runtime.Object) (runtime.Object, bootstrappolicy.Operation) {
			if cur != nil {
				return nil, bootstrappolicy.OpNone
			}
			return want, bootstrappolicy.OpCreate
		}); err != nil {
			return err
		}
	}
	for ns, bindings := range bootstrappolicy.NamespaceRoleBindings() {
		for _, want := range bindings {
			if err := reconcileOne(ctx, reg, "rolebindings", ns, want.Name, func(cur runtime.Object) (runtime.Object, bootstrappolicy.Operation) {
				have, _ := cur.(*rbacv1.RoleBinding)
				return bootstrappolicy.ReconcileRoleBinding(have, &want)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// reconcileOne creates, updates or re-creates one default as decide says.
func reconcileOne(ctx context.Context, reg *registry.Registry, plural, ns, name string, decide func(cur runtime.Object) (runtime.Object, bootstrappolicy.Operation)) error {
	res, err := scheme.Lookup(plural)
	if err != nil {
		return err
	}
	key := registry.Key{Resource: res, Namespace: ns, Name: name}
	cur, _, err := reg.Read(ctx, key)
	if errors.Is(err, apierror.ErrNotFound) {
		cur, err = nil, nil
	}
	if err != nil {
		return err
	}
	var out runtime.Object
	var op bootstrappolicy.Operation
	if cur == nil {
		out, op = decide(nil)
	} else {
		out, op = decide(cur)
	}
	switch op {
	case bootstrappolicy.OpCreate:
		_, err = reg.Create(ctx, registry.Key{Resource: res, Namespace: ns}, out, false)
	case bootstrappolicy.OpUpdate:
		_, err = reg.Update(ctx, key, registry.UpdateOptions{}, func(runtime.Object, storage.KV) (runtime.Object, string, error) { return out, "", nil })
	case bootstrappolicy.OpRecreate:
		if _, err = reg.Delete(ctx, key, nil); err == nil || errors.Is(err, apierror.ErrNotFound) {
			_, err = reg.Create(ctx, registry.Key{Resource: res, Namespace: ns}, out, false)
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", plural, key, err)
	}
	return nil
}

// liveObjects reads what ServiceAccount tokens are bound to from the access caches.
type liveObjects struct{ a *access.Access }

var errNoCache = apierror.New(apierror.ErrUnavailable, "the caches are not built yet")

func (l *liveObjects) GetServiceAccount(_ context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	if l.a == nil {
		return nil, errNoCache
	}
	return l.a.ServiceAccount(ns, name)
}

func (l *liveObjects) GetPod(_ context.Context, ns, name string) (*corev1.Pod, error) {
	if l.a == nil {
		return nil, errNoCache
	}
	return l.a.Pod(ns, name)
}

func (l *liveObjects) GetSecret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if l.a == nil {
		return nil, errNoCache
	}
	return l.a.Secret(ns, name)
}

func (l *liveObjects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	if l.a == nil {
		return nil, errNoCache
	}
	return l.a.Node(name)
}
