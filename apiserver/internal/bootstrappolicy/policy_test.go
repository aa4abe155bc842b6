package bootstrappolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"minik8s.io/shared/scheme"
)

// everyDefault is every default object's metadata, by kind/namespace/name.
func everyDefault() map[string]metav1.ObjectMeta {
	out := map[string]metav1.ObjectMeta{}
	for _, r := range ClusterRoles() {
		out["ClusterRole/"+r.Name] = r.ObjectMeta
	}
	for _, b := range ClusterRoleBindings() {
		out["ClusterRoleBinding/"+b.Name] = b.ObjectMeta
	}
	for ns, rs := range NamespaceRoles() {
		for _, r := range rs {
			out["Role/"+ns+"/"+r.Name] = r.ObjectMeta
		}
	}
	for ns, bs := range NamespaceRoleBindings() {
		for _, b := range bs {
			out["RoleBinding/"+ns+"/"+b.Name] = b.ObjectMeta
		}
	}
	return out
}

func TestDefaultsAreLabelledAndAutoupdated(t *testing.T) {
	for key, m := range everyDefault() {
		t.Run(key, func(t *testing.T) {
			got := map[string]string{
				"label":      m.Labels[BootstrappingLabel],
				"annotation": m.Annotations[rbacv1.AutoUpdateAnnotationKey],
			}
			want := map[string]string{"label": BootstrappingValue, "annotation": "true"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultsAreUnique(t *testing.T) {
	seen := map[string]int{}
	count := func(key string) { seen[key]++ }
	for _, r := range ClusterRoles() {
		count("ClusterRole/" + r.Name)
	}
	for _, b := range ClusterRoleBindings() {
		count("ClusterRoleBinding/" + b.Name)
	}
	for ns, rs := range NamespaceRoles() {
		for _, r := range rs {
			count("Role/" + ns + "/" + r.Name)
		}
	}
	for ns, bs := range NamespaceRoleBindings() {
		for _, b := range bs {
			count("RoleBinding/" + ns + "/" + b.Name)
		}
	}
	var dup []string
	for k, n := range seen {
		if n > 1 {
			dup = append(dup, k)
		}
	}
	if diff := cmp.Diff([]string(nil), dup); diff != "" {
		t.Errorf("defined more than once (-want +got):\n%s", diff)
	}
}

// A default binding to a missing role would be stored and grant nothing.
func TestBindingsReferToDefaultRoles(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range ClusterRoles() {
		roles["ClusterRole/"+r.Name] = true
	}
	for ns, rs := range NamespaceRoles() {
		for _, r := range rs {
			roles[ns+"/Role/"+r.Name] = true
		}
	}
	refs := map[string]string{}
	for _, b := range ClusterRoleBindings() {
		refs["ClusterRoleBinding/"+b.Name] = b.RoleRef.Kind + "/" + b.RoleRef.Name
	}
	for ns, bs := range NamespaceRoleBindings() {
		for _, b := range bs {
			ref := b.RoleRef.Kind + "/" + b.RoleRef.Name
			if b.RoleRef.Kind == "Role" {
				ref = ns + "/" + ref
			}
			refs["RoleBinding/"+ns+"/"+b.Name] = ref
		}
	}
	for binding, ref := range refs {
		t.Run(binding, func(t *testing.T) {
			if !roles[ref] {
				t.Errorf("refers to %s, which is not a default role", ref)
			}
		})
	}
}

func TestDefaultBindingSubjects(t *testing.T) {
	tests := []struct {
		user   string
		groups []string
		call   call
		want   bool
	}{
		{"admin", []string{MastersGroup, AuthenticatedGroup}, call{"delete", "", "namespaces", "", "kube-system"}, true},
		{"alice", authenticated(), call{"create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""}, true},
		{"alice", authenticated(), call{"create", "authorization.k8s.io", "selfsubjectrulesreviews", "", ""}, true},
		{"alice", authenticated(), call{"create", "authentication.k8s.io", "selfsubjectreviews", "", ""}, true},
		{"alice", authenticated(), call{"list", "", "pods", ns, ""}, false},
		{"system:anonymous", []string{UnauthenticatedGroup}, call{"create", "authentication.k8s.io", "selfsubjectreviews", "", ""}, false},
		{"system:serviceaccount:default:app", authenticated(ServiceAccountsGroup), call{"list", "", "secrets", ns, ""}, false},
	}
	for _, tc := range tests {
		t.Run(tc.user+" "+tc.call.String(), func(t *testing.T) {
			if got := allowed(rulesFor(tc.user, tc.groups, tc.call.namespace), tc.call); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

// Who may read which non-resource URLs through the default bindings.
func TestDefaultNonResourceURLs(t *testing.T) {
	tests := []struct {
		name   string
		groups []string
		url    string
		want   bool
	}{
		{"anonymous version", []string{UnauthenticatedGroup}, "/version", true},
		{"anonymous healthz", []string{UnauthenticatedGroup}, "/healthz", true},
		{"anonymous discovery", []string{UnauthenticatedGroup}, "/apis", false},
		{"user discovery", authenticated(), "/apis/apps/v1", true},
		{"user openapi", authenticated(), "/openapi/v3", true},
		{"user metrics", authenticated(), "/metrics", false},
		{"monitoring metrics", authenticated(MonitoringGroup), "/metrics", true},
		{"monitoring readyz check", authenticated(MonitoringGroup), "/readyz/etcd", true},
		{"service account jwks", authenticated(ServiceAccountsGroup), "/openid/v1/jwks", true},
		{"user jwks", authenticated(), "/openid/v1/jwks", false},
		{"masters anything", []string{MastersGroup}, "/debug/pprof/", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules := rulesFor("someone", tc.groups, "")
			want := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{tc.url}}
			if got, _ := validation.Covers(rules, []rbacv1.PolicyRule{want}); got != tc.want {
				t.Errorf("get %s allowed = %v, want %v", tc.url, got, tc.want)
			}
		})
	}
}

// The aggregated roles reach every kind minik8s serves in a namespace, with Kubernetes'
// exceptions: view never reads Secrets (nor Leases and RBAC, as upstream), edit never writes
// Endpoints, EndpointSlices or RBAC, admin grants RBAC within the namespace, and
// ControllerRevisions, which their controllers write, are only read.
func TestAggregatedRolesCoverServedKinds(t *testing.T) {
	roles := aggregated()
	notViewed := map[string]bool{"secrets": true, "leases": true, "roles": true, "rolebindings": true}
	notEdited := map[string]bool{"endpoints": true, "endpointslices": true, "roles": true, "rolebindings": true, "controllerrevisions": true,
		"resourcequotas": true, "limitranges": true}
	notAdministered := map[string]bool{"endpoints": true, "endpointslices": true, "controllerrevisions": true, "resourcequotas": true, "limitranges": true}
	for _, r := range scheme.Served() {
		if !r.Namespaced {
			continue
		}
		t.Run(r.GVR().String(), func(t *testing.T) {
			got := map[string]bool{
				"view get":     allowed(roles["view"].Rules, call{"get", r.GVK.Group, r.Plural, ns, "x"}),
				"view list":    allowed(roles["view"].Rules, call{"list", r.GVK.Group, r.Plural, ns, ""}),
				"view create":  allowed(roles["view"].Rules, call{"create", r.GVK.Group, r.Plural, ns, ""}),
				"edit create":  allowed(roles["edit"].Rules, call{"create", r.GVK.Group, r.Plural, ns, ""}),
				"edit delete":  allowed(roles["edit"].Rules, call{"delete", r.GVK.Group, r.Plural, ns, "x"}),
				"admin create": allowed(roles["admin"].Rules, call{"create", r.GVK.Group, r.Plural, ns, ""}),
				"admin get":    allowed(roles["admin"].Rules, call{"get", r.GVK.Group, r.Plural, ns, "x"}),
			}
			want := map[string]bool{
				"view get": !notViewed[r.Plural], "view list": !notViewed[r.Plural], "view create": false,
				"edit create": !notEdited[r.Plural], "edit delete": !notEdited[r.Plural],
				"admin create": !notAdministered[r.Plural], "admin get": true,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Every served subresource of a namespaced kind, as Kubernetes splits them: view reads status,
// scale and logs; edit also writes scale, evicts, calls functions and workflows, requests
// ServiceAccount tokens, adds debug containers, streams into pods (exec, attach,
// port-forward) and proxies to pods and services; nobody but the scheduler binds.
func TestAggregatedRolesCoverSubresources(t *testing.T) {
	roles := aggregated()
	for _, r := range scheme.Resources {
		if !r.Namespaced {
			continue
		}
		for _, sub := range r.Subresources {
			res := r.Plural + "/" + sub
			var want map[string]bool
			switch sub {
			case "status":
				want = map[string]bool{"view get": true, "edit create": false, "edit get": true}
			case "scale":
				want = map[string]bool{"view get": true, "edit create": true, "edit get": true}
			case "log":
				want = map[string]bool{"view get": true, "edit create": false, "edit get": true}
			case "invoke", "eviction", "token":
				want = map[string]bool{"view get": false, "edit create": true, "edit get": false}
			case "ephemeralcontainers":
				// As upstream, only those granted it on purpose add debug containers.
				want = map[string]bool{"view get": false, "edit create": false, "edit get": false}
			case "exec", "attach", "portforward", "proxy":
				want = map[string]bool{"view get": false, "edit create": true, "edit get": true}
			case "binding":
				// Only the scheduler binds.
				want = map[string]bool{"view get": false, "edit create": false, "edit get": false}
			default:
				t.Errorf("%s: no expectation for subresource %q", r.GVR(), sub)
				continue
			}
			t.Run(r.GVK.Group+"/"+res, func(t *testing.T) {
				got := map[string]bool{
					"view get":    allowed(roles["view"].Rules, call{"get", r.GVK.Group, res, ns, "x"}),
					"edit create": allowed(roles["edit"].Rules, call{"create", r.GVK.Group, res, ns, "x"}),
					"edit get":    allowed(roles["edit"].Rules, call{"get", r.GVK.Group, res, ns, "x"}),
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestAdminGrantsWithinNamespace(t *testing.T) {
	admin := aggregated()["admin"].Rules
	tests := []struct {
		call call
		want bool
	}{
		{call{"create", "rbac.authorization.k8s.io", "rolebindings", ns, ""}, true},
		{call{"update", "rbac.authorization.k8s.io", "roles", ns, "r"}, true},
		{call{"create", "authorization.k8s.io", "localsubjectaccessreviews", ns, ""}, true},
		{call{"impersonate", "", "serviceaccounts", ns, "default"}, true},
		{call{"create", "", "serviceaccounts/token", ns, "default"}, true},
		{call{"create", "rbac.authorization.k8s.io", "clusterroles", "", ""}, false},
		{call{"escalate", "rbac.authorization.k8s.io", "roles", ns, "r"}, false},
		{call{"create", "", "nodes", "", ""}, false},
		{call{"delete", "", "namespaces", "", ns}, false},
	}
	for _, tc := range tests {
		t.Run(tc.call.String(), func(t *testing.T) {
			if got := allowed(admin, tc.call); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}

// nodes/proxy reaches every kubelet with the apiserver's own credentials: of the default
// roles only cluster-admin and system:kubelet-api-admin grant it, as in Kubernetes. The
// controller-manager's role may get every resource of every group (its garbage collector
// reads owners of any kind, custom ones included, as Kubernetes' generic-garbage-collector
// role allows), which reads nodes/proxy too, but it never writes there.
func TestNodeProxyOnlyForAdmins(t *testing.T) {
	for name, role := range aggregated() {
		got := map[string]bool{}
		for _, verb := range []string{"get", "create"} {
			got[verb] = allowed(role.Rules, call{verb, "", "nodes/proxy", "", "node-1"})
		}
		want := name == ClusterAdminRole || name == KubeletAPIAdminRole
		wantGet := want || name == ControllerRole
		if got["get"] != wantGet || got["create"] != want {
			t.Errorf("%s grants nodes/proxy %v, want get %v and create %v", name, got, wantGet, want)
		}
	}
}
