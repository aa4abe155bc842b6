package server

import (
	"context"
	"time"

	"github.com/gin-gonic/gin"
	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sauthorizer "k8s.io/apiserver/pkg/authorization/authorizer"

	"minik8s.io/apiserver/internal/admission/noderestriction"
	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/apiserver/internal/authorizer/rbac"
	"minik8s.io/apiserver/internal/registry"
)

// Access is how the server authorizes requests and admits writes. A server without one
// lets every authenticated request through, as kube-apiserver's AlwaysAllow mode does.
type Access interface {
	authorizer.Authorizer
	authorizer.RuleResolver
	// HasSynced reports whether the policy has been read; requests wait for it.
	HasSynced() bool
	// RBAC checks that roles and bindings grant no more than their author holds.
	RBAC() *rbac.Resolver
	// Pod reads a pod from the caches, for NodeRestriction.
	Pod(ns, name string) (*corev1.Pod, error)
	// Start keeps the caches until ctx ends.
	Start(ctx context.Context) error
}

// syncWait bounds how long a request waits for the policy caches at start.
const syncWait = 30 * time.Second

// authorize decides on an authenticated request, after impersonation, and refuses it with
// Kubernetes' 403 unless the chain allows it. What it decided on is kept in the request's
// context for admission and the audit log.
func (s *Server) authorize(c *gin.Context) {
	ctx := c.Request.Context()
	u, _ := IdentityFrom(ctx)
	if imp, ok, err := authorizer.ParseImpersonation(c.Request.Header); err != nil {
		writeError(c, err)
		return
	} else if ok {
		for _, check := range authorizer.ImpersonationChecks(u, imp) {
			if d, reason, _ := s.decide(ctx, check); d != authorizer.Allow {
				writeError(c, authorizer.Forbidden(check, reason))
				return
			}
		}
		u = imp.ImpersonatedUser()
		ctx = context.WithValue(ctx, identityKey{}, u)
	}
	a, err := authorizer.Parse(c.Request)
	if err != nil {
		writeError(c, err)
		return
	}
	a.User = u
	if d, reason, _ := s.decide(ctx, a); d != authorizer.Allow {
		c.Set(decisionKey, "forbid")
		c.Set(reasonKey, reason)
		writeError(c, authorizer.Forbidden(a, reason))
		return
	} else {
		c.Set(decisionKey, "allow")
		c.Set(reasonKey, reason)
	}
	c.Request = c.Request.WithContext(withWebhookWarnings(authorizer.WithAttributes(ctx, a), c))
	c.Next()
}

const (
	decisionKey = "minik8s.decision"
	reasonKey   = "minik8s.reason"
)

// decide runs the chain, or allows everything without one.
func (s *Server) decide(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if s.access == nil {
		return authorizer.Allow, "", nil
	}
	if !s.access.HasSynced() && !a.User.InGroup(authorizer.SystemPrivilegedGroup) {
		wait, cancel := context.WithTimeout(ctx, syncWait)
		defer cancel()
		for !s.access.HasSynced() {
			select {
			case <-wait.Done():
				return authorizer.NoOpinion, "the authorization policy is not loaded yet", nil
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return s.access.Authorize(ctx, a)
}

// admit is the registry's admission chain for requests users make: NodeRestriction for
// nodes and RBAC's escalation checks for roles and bindings, then the mutating webhooks. The
// apiserver's own writes carry no attributes and pass.
func (s *Server) admit(ctx context.Context, op registry.Operation, k registry.Key, sub string, obj, old runtime.Object) error {
	if err := s.admitBuiltin(ctx, op, k, sub, obj, old); err != nil {
		return err
	}
	return s.mutateWebhooks(ctx, op, k, sub, obj, old)
}

// admitBuiltin is the admission plugins compiled in: NodeRestriction and RBAC's checks.
func (s *Server) admitBuiltin(ctx context.Context, op registry.Operation, k registry.Key, sub string, obj, old runtime.Object) error {
	a, ok := authorizer.AttributesFrom(ctx)
	if !ok || s.access == nil {
		return nil
	}
	if _, isNode := authorizer.NodeIdentity(a.User); isNode {
		req := noderestriction.Request{User: a.User, Operation: admissionv1.Operation(op),
			Resource:    schema.GroupResource{Group: k.Resource.GVK.Group, Resource: k.Resource.Plural},
			Subresource: sub, Namespace: k.Namespace, Name: k.Name, Object: obj, OldObject: old}
		if err := noderestriction.Admit(req, s.access.Pod); err != nil {
			return err
		}
	}
	if op == registry.OpDelete || k.Resource.GVK.Group != rbacv1.GroupName {
		return nil
	}
	resolver := s.access.RBAC()
	switch o := obj.(type) {
	case *rbacv1.Role:
		if old, ok := old.(*rbacv1.Role); ok && equality.Semantic.DeepEqual(old.Rules, o.Rules) {
			return nil
		}
		return resolver.CheckRoleWrite(ctx, s.access, a, k.Name, o.Rules)
	case *rbacv1.ClusterRole:
		if old, ok := old.(*rbacv1.ClusterRole); ok && equality.Semantic.DeepEqual(old.Rules, o.Rules) {
			return nil
		}
		return resolver.CheckRoleWrite(ctx, s.access, a, k.Name, o.Rules)
	case *rbacv1.RoleBinding:
		if old, ok := old.(*rbacv1.RoleBinding); ok && old.RoleRef == o.RoleRef && equality.Semantic.DeepEqual(old.Subjects, o.Subjects) {
			return nil
		}
		return resolver.CheckBindingWrite(ctx, s.access, a, k.Name, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		if old, ok := old.(*rbacv1.ClusterRoleBinding); ok && old.RoleRef == o.RoleRef && equality.Semantic.DeepEqual(old.Subjects, o.Subjects) {
			return nil
		}
		return resolver.CheckBindingWrite(ctx, s.access, a, k.Name, o.RoleRef)
	}
	return nil
}

// accessReviewUser is who an access review asks about.
func reviewUser(spec authorizationv1.SubjectAccessReviewSpec) authorizer.User {
	u := authorizer.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// reviewAttributes turns an access review's question into attributes.
func reviewAttributes(u authorizer.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizer.Attributes {
	if ra != nil {
		return authorizer.Attributes{User: u, Verb: ra.Verb, ResourceRequest: true, APIGroup: ra.Group, APIVersion: ra.Version,
			Namespace: ra.Namespace, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name}
	}
	return authorizer.Attributes{User: u, Verb: nra.Verb, Path: nra.Path}
}

// celAuthorizer answers the authorizer checks of admission CEL expressions (webhooks'
// matchConditions) with this server's authorization, as kube-apiserver gives them its own.
type celAuthorizer struct{ s *Server }

func (c celAuthorizer) Authorize(ctx context.Context, a k8sauthorizer.Attributes) (k8sauthorizer.Decision, string, error) {
	var u authorizer.User
	if info := a.GetUser(); info != nil {
		u = authorizer.User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
	}
	d, reason, err := c.s.decide(ctx, authorizer.Attributes{
		User: u, Verb: a.GetVerb(), ResourceRequest: a.IsResourceRequest(), Path: a.GetPath(),
		APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Namespace: a.GetNamespace(),
		Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(),
	})
	switch d {
	case authorizer.Allow:
		return k8sauthorizer.DecisionAllow, reason, err
	case authorizer.Deny:
		return k8sauthorizer.DecisionDeny, reason, err
	}
	return k8sauthorizer.DecisionNoOpinion, reason, err
}
