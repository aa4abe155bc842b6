package suite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// Who the measured requests come from (Config.Identity).
const (
	// IdentityAdmin is the admin kubeconfig's user, in system:masters, which every
	// authorization mode allows before RBAC is consulted.
	IdentityAdmin = "admin"
	// IdentityRBAC is a ServiceAccount of the bench namespace allowed through a RoleBinding,
	// with a token from TokenRequest: authentication checks the token's signature and
	// binding, and RBAC looks through every binding of the cluster and namespace.
	IdentityRBAC = "rbac"
)

// The apiserver's --authorization-mode values (Config.AuthorizationMode).
const (
	ModeNodeRBAC    = "Node,RBAC"
	ModeAlwaysAllow = "AlwaysAllow"
)

// Names of what the rbac identity is made of, in Namespace.
const (
	writerAccount = "bench-writer"
	writerRole    = "bench-configmaps"
	// otherRole is the ClusterRole the other bindings grant: our own, since view and edit
	// get their rules from aggregation, which the controller-manager does and the suite
	// does not run.
	otherRole = "bench-reader"
	// writerTokenTTL outlasts any run (-timeout is 20m under make bench).
	writerTokenTTL = 2 * time.Hour
)

// validate checks the access options; the apiserver itself checks the mode's spelling
// again, but a typo should fail before a build.
func (c *Config) validate() error {
	switch c.Identity {
	case IdentityAdmin, IdentityRBAC:
	default:
		return fmt.Errorf("identity %q: want %q or %q", c.Identity, IdentityAdmin, IdentityRBAC)
	}
	switch c.AuthorizationMode {
	case "", ModeNodeRBAC, ModeAlwaysAllow:
	default:
		return fmt.Errorf("authorization mode %q: want %q or %q", c.AuthorizationMode, ModeNodeRBAC, ModeAlwaysAllow)
	}
	if c.OtherBindings < 0 {
		return fmt.Errorf("other bindings %d: want zero or more", c.OtherBindings)
	}
	return nil
}

// apiserverArgs are the flags the access options add to the private apiserver; policy is
// the audit policy file, used only with Audit.
func apiserverArgs(c Config, policy string) []string {
	var args []string
	if c.AuthorizationMode != "" {
		args = append(args, "--authorization-mode", c.AuthorizationMode)
	}
	if c.Audit {
		args = append(args, "--audit-policy-file", policy, "--audit-log-path", filepath.Join(c.Workdir, "audit.log"))
	}
	return args
}

// describeAccess says in the report how the measured requests were authenticated and
// authorized.
func describeAccess(c Config) string {
	mode := c.AuthorizationMode
	if mode == "" {
		mode = "default (" + ModeNodeRBAC + ")"
	}
	who := "admin (system:masters)"
	if c.Identity == IdentityRBAC {
		who = fmt.Sprintf("ServiceAccount %s/%s through a RoleBinding, TokenRequest token; %d other bindings", Namespace, writerAccount, c.OtherBindings)
	}
	audit := "off"
	if c.Audit {
		audit = "configs/audit-policy.yaml"
	}
	return fmt.Sprintf("--authorization-mode %s, identity %s, audit log %s", mode, who, audit)
}

// otherBindings are n bindings of otherRole to subjects other than the writer: half
// ClusterRoleBindings to users, half RoleBindings in Namespace to ServiceAccounts, so that
// RBAC looks through both kinds on every request as it would in a cluster with many users.
func otherBindings(n int) ([]*rbacv1.ClusterRoleBinding, []*rbacv1.RoleBinding) {
	crbs := make([]*rbacv1.ClusterRoleBinding, 0, n-n/2)
	rbs := make([]*rbacv1.RoleBinding, 0, n/2)
	for i := range n {
		if i%2 == 0 {
			crbs = append(crbs, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-other-%d", i)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: otherRole},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: fmt.Sprintf("bench-user-%d", i)}},
			})
			continue
		}
		rbs = append(rbs, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-other-%d", i), Namespace: Namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: otherRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: fmt.Sprintf("bench-other-%d", i), Namespace: Namespace}},
		})
	}
	return crbs, rbs
}

// readerRole is the ClusterRole of the other bindings.
func readerRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: otherRole},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps", "pods", "services"},
			Verbs: []string{"get", "list", "watch"},
		}},
	}
}

// writerPolicy is the ServiceAccount, Role and RoleBinding of the rbac identity.
func writerPolicy() (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: writerAccount, Namespace: Namespace}}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: writerRole, Namespace: Namespace},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"create", "get", "list", "delete"},
		}},
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: writerAccount, Namespace: Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: writerRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: writerAccount, Namespace: Namespace}},
	}
	return sa, role, rb
}

// setupIdentity makes the rbac identity (as admin) and keeps its token for e.client.
// The writer's own binding goes last and the wait ends only when the authorizer's caches
// hold it and the last other binding, so the measurement starts with all of them in place.
func (e *env) setupIdentity(ctx context.Context) error {
	if e.cfg.Identity != IdentityRBAC {
		return nil
	}
	crbs, rbs := otherBindings(e.cfg.OtherBindings)
	reader := readerRole()
	if _, err := client.MustFor[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](e.api).Create(ctx, reader, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create clusterrole %s: %w", reader.Name, err)
	}
	crbClient := client.MustFor[*rbacv1.ClusterRoleBinding, *rbacv1.ClusterRoleBindingList](e.api)
	for _, b := range crbs {
		if _, err := crbClient.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create clusterrolebinding %s: %w", b.Name, err)
		}
	}
	rbClient := client.MustFor[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](e.api)
	for _, b := range rbs {
		if _, err := rbClient.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create rolebinding %s: %w", b.Name, err)
		}
	}
	sa, role, rb := writerPolicy()
	if _, err := client.MustFor[*corev1.ServiceAccount, *corev1.ServiceAccountList](e.api).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create serviceaccount %s: %w", sa.Name, err)
	}
	if _, err := client.MustFor[*rbacv1.Role, *rbacv1.RoleList](e.api).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create role %s: %w", role.Name, err)
	}
	if _, err := rbClient.Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create rolebinding %s: %w", rb.Name, err)
	}

	token, err := e.requestToken(ctx)
	if err != nil {
		return err
	}
	e.token = token
	e.log.Info("rbac identity ready", "serviceAccount", Namespace+"/"+writerAccount, "otherBindings", e.cfg.OtherBindings)
	return e.waitPolicy(ctx, crbs)
}

// requestToken asks TokenRequest for a token of the writer ServiceAccount.
func (e *env) requestToken(ctx context.Context) (string, error) {
	res, err := scheme.Lookup("serviceaccounts")
	if err != nil {
		return "", err
	}
	ttl := int64(writerTokenTTL / time.Second)
	req := &authenticationv1.TokenRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "TokenRequest"},
		Spec:     authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl},
	}
	var resp authenticationv1.TokenRequest
	if err := e.api.Post().Resource(res, Namespace, writerAccount, "token").Body(req).Into(ctx, &resp); err != nil {
		return "", fmt.Errorf("request a token for serviceaccount %s/%s: %w", Namespace, writerAccount, err)
	}
	if resp.Status.Token == "" {
		return "", fmt.Errorf("request a token for serviceaccount %s/%s: no token in the answer", Namespace, writerAccount)
	}
	return resp.Status.Token, nil
}

// waitPolicy waits until the writer may list ConfigMaps (its binding is in the caches) and
// the last other ClusterRoleBinding's user may too (so is that informer's).
func (e *env) waitPolicy(ctx context.Context, crbs []*rbacv1.ClusterRoleBinding) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	writer, err := e.client()
	if err != nil {
		return err
	}
	cms := configMaps(writer)
	for {
		_, lerr := cms.List(ctx, Namespace, metav1.ListOptions{Limit: 1})
		if lerr == nil && len(crbs) > 0 {
			lerr = e.allowed(ctx, crbs[len(crbs)-1].Subjects[0].Name)
		}
		if lerr == nil {
			return nil
		}
		if !errors.Is(lerr, apierror.ErrForbidden) {
			return fmt.Errorf("wait for the rbac identity's policy: %w", lerr)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("rbac identity still refused after 30s: %w", lerr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// allowed asks a SubjectAccessReview whether user may list ConfigMaps in Namespace, and
// answers ErrForbidden if not.
func (e *env) allowed(ctx context.Context, user string) error {
	review := &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:               user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: Namespace, Verb: "list", Resource: "configmaps"},
		},
	}
	var resp authorizationv1.SubjectAccessReview
	if err := e.api.Post().AbsPath("/apis/authorization.k8s.io/v1/subjectaccessreviews").Body(review).Into(ctx, &resp); err != nil {
		return fmt.Errorf("subjectaccessreview for %s: %w", user, err)
	}
	if !resp.Status.Allowed {
		return fmt.Errorf("%s may not list configmaps yet: %w", user, apierror.ErrForbidden)
	}
	return nil
}

// client is a new client, with its own connections, as the measured identity.
func (e *env) client() (*client.Client, error) {
	if e.token == "" {
		return e.proc.Client(10 * time.Second)
	}
	cfg, err := client.FromKubeconfig(e.proc.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Token, cfg.Timeout, cfg.UserAgent = e.token, 10*time.Second, "minik8s-bench"
	return client.New(cfg)
}

// auditPolicy finds configs/audit-policy.yaml, the policy make up gives the apiserver.
func auditPolicy(ctx context.Context) (string, error) {
	return cluster.WorkspaceFile(ctx, filepath.Join("configs", "audit-policy.yaml"))
}
