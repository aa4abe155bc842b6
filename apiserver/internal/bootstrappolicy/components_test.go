package bootstrappolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/apiserver/internal/bootstrap"
	"minik8s.io/shared/scheme"
)

const (
	ns        = "default"
	system    = LeaderElectionNamespace
	nodeLease = "kube-node-lease"
)

// componentCase is what one identity's code calls (allow) and a sample of what it never
// needs (deny), as the audit of each component found them.
type componentCase struct {
	user   string
	groups []string
	// node: the kubelet, whose rules the Node authorizer applies on top of RBAC.
	node  bool
	allow []call
	deny  []call
}

func componentCases() map[string]componentCase {
	return map[string]componentCase{
		"scheduler": {
			user: KubeSchedulerUser, groups: authenticated(),
			allow: []call{
				{"list", "", "pods", "", ""}, {"watch", "", "pods", "", ""},
				{"list", "", "nodes", "", ""}, {"watch", "", "nodes", "", ""},
				{"list", "", "persistentvolumeclaims", "", ""}, {"list", "", "persistentvolumes", "", ""},
				{"create", "", "pods/binding", ns, "p"},
				{"update", "", "pods/status", ns, "p"},
				{"create", "", "events", ns, ""}, {"patch", "", "events", ns, "e"},
				{"get", "coordination.k8s.io", "leases", system, SchedulerLeaseName},
				{"create", "coordination.k8s.io", "leases", system, ""},
				{"update", "coordination.k8s.io", "leases", system, SchedulerLeaseName},
				{"create", "authentication.k8s.io", "selfsubjectreviews", "", ""},
			},
			deny: []call{
				{"get", "", "secrets", ns, "s"},
				{"delete", "", "pods", ns, "p"},
				{"update", "", "pods", ns, "p"},
				{"update", "", "nodes", "", "n"},
				{"update", "coordination.k8s.io", "leases", system, ControllerManagerLeaseName},
				{"create", "coordination.k8s.io", "leases", ns, ""},
				{"update", "coordination.k8s.io", "leases", nodeLease, "n1"},
			},
		},
		"controller-manager": {
			user: KubeControllerManagerUser, groups: authenticated(),
			allow: []call{
				// deployment
				{"patch", "apps", "deployments", ns, "d"}, {"update", "apps", "deployments/status", ns, "d"},
				{"create", "apps", "replicasets", ns, ""}, {"update", "apps", "replicasets", ns, "rs"},
				{"patch", "apps", "replicasets", ns, "rs"}, {"delete", "apps", "replicasets", ns, "rs"},
				// replicaset and job
				{"create", "", "pods", ns, ""}, {"patch", "", "pods", ns, "p"}, {"delete", "", "pods", ns, "p"},
				{"update", "apps", "replicasets/status", ns, "rs"}, {"update", "batch", "jobs/status", ns, "j"},
				// replicationcontroller
				{"watch", "", "replicationcontrollers", "", ""}, {"get", "", "replicationcontrollers", ns, "rc"},
				{"update", "", "replicationcontrollers/status", ns, "rc"},
				// statefulset
				{"list", "apps", "statefulsets", "", ""}, {"get", "apps", "statefulsets", ns, "web"},
				{"update", "apps", "statefulsets/status", ns, "web"}, {"list", "apps", "controllerrevisions", "", ""},
				{"create", "apps", "controllerrevisions", ns, ""}, {"update", "apps", "controllerrevisions", ns, "web-1"},
				{"patch", "apps", "controllerrevisions", ns, "web-1"}, {"delete", "apps", "controllerrevisions", ns, "web-1"},
				{"create", "", "persistentvolumeclaims", ns, ""}, {"patch", "", "persistentvolumeclaims", ns, "data-web-0"},
				{"delete", "", "persistentvolumeclaims", ns, "data-web-0"}, {"update", "apps", "statefulsets/scale", ns, "web"},
				// ttl-after-finished
				{"get", "batch", "jobs", ns, "j"}, {"delete", "batch", "jobs", ns, "j"},
				// endpoint and endpointslice
				{"list", "", "services", "", ""}, {"create", "", "endpoints", ns, ""}, {"update", "", "endpoints", ns, "svc"},
				{"delete", "", "endpoints", ns, "svc"}, {"list", "discovery.k8s.io", "endpointslices", "", ""},
				{"create", "discovery.k8s.io", "endpointslices", ns, ""}, {"update", "discovery.k8s.io", "endpointslices", ns, "s"},
				{"delete", "discovery.k8s.io", "endpointslices", ns, "s"},
				// nodelifecycle
				{"list", "coordination.k8s.io", "leases", "", ""}, {"get", "", "nodes", "", "n"}, {"update", "", "nodes", "", "n"},
				{"update", "", "nodes/status", "", "n"}, {"update", "", "pods/status", ns, "p"},
				// horizontalpodautoscaling
				{"update", "autoscaling", "horizontalpodautoscalers/status", ns, "h"},
				{"get", "apps", "deployments/scale", ns, "d"}, {"update", "apps", "deployments/scale", ns, "d"},
				{"update", "apps", "replicasets/scale", ns, "rs"}, {"list", "metrics.k8s.io", "pods", ns, ""},
				// ingress
				{"update", "networking.k8s.io", "ingresses/status", ns, "i"}, {"get", "", "namespaces", "", "minik8s-ingress"},
				{"create", "", "namespaces", "", ""}, {"create", "", "services", "minik8s-ingress", ""},
				{"get", "", "pods/exec", "minik8s-ingress", "nginx"}, {"create", "", "pods/exec", "minik8s-ingress", "nginx"},
				{"get", "", "configmaps", "minik8s-ingress", "c"}, {"create", "", "configmaps", "minik8s-ingress", ""},
				{"update", "", "configmaps", "minik8s-ingress", "c"},
				{"watch", "networking.k8s.io", "ingressclasses", "", ""}, {"create", "networking.k8s.io", "ingressclasses", "", ""},
				// persistentvolume-binder
				{"create", "", "persistentvolumes", "", ""}, {"update", "", "persistentvolumes", "", "pv"},
				{"delete", "", "persistentvolumes", "", "pv"}, {"update", "", "persistentvolumes/status", "", "pv"},
				{"get", "", "persistentvolumeclaims", ns, "c"}, {"update", "", "persistentvolumeclaims", ns, "c"},
				{"update", "", "persistentvolumeclaims/status", ns, "c"},
				{"list", "storage.k8s.io", "storageclasses", "", ""}, {"create", "storage.k8s.io", "storageclasses", "", ""},
				// resourcequota
				{"list", "", "resourcequotas", "", ""}, {"watch", "", "resourcequotas", "", ""},
				{"update", "", "resourcequotas/status", ns, "q"}, {"list", "", "limitranges", "", ""},
				// root-ca-cert-publisher and clusterrole-aggregation
				{"list", "", "namespaces", "", ""}, {"list", "", "configmaps", "", ""},
				{"escalate", "rbac.authorization.k8s.io", "clusterroles", "", "admin"},
				{"update", "rbac.authorization.k8s.io", "clusterroles", "", "admin"},
				// recorder and leader election
				{"create", "", "events", ns, ""}, {"patch", "", "events", ns, "e"},
				{"get", "coordination.k8s.io", "leases", system, ControllerManagerLeaseName},
				{"create", "coordination.k8s.io", "leases", system, ""},
				{"update", "coordination.k8s.io", "leases", system, ControllerManagerLeaseName},
			},
			deny: []call{
				{"create", "", "secrets", ns, ""},
				{"update", "", "secrets", ns, "s"},
				{"create", "", "pods/binding", ns, "p"},
				{"create", "", "serviceaccounts/token", ns, "default"},
				{"impersonate", "", "serviceaccounts", ns, "default"},
				{"bind", "rbac.authorization.k8s.io", "clusterroles", "", "cluster-admin"},
				{"update", "coordination.k8s.io", "leases", system, SchedulerLeaseName},
				{"update", "", "pods", ns, "p"},
				{"update", "", "resourcequotas", ns, "q"}, {"create", "", "limitranges", ns, ""},
			},
		},
		"kubeproxy": {
			user: KubeProxyUser, groups: authenticated(),
			allow: []call{
				{"list", "", "services", "", ""}, {"watch", "", "services", "", ""},
				{"list", "discovery.k8s.io", "endpointslices", "", ""}, {"watch", "discovery.k8s.io", "endpointslices", "", ""},
				{"list", "networking.k8s.io", "ingresses", "", ""}, {"watch", "networking.k8s.io", "ingresses", "", ""},
			},
			deny: []call{
				{"list", "", "pods", "", ""},
				{"get", "", "secrets", ns, "s"},
				{"list", "", "endpoints", "", ""},
				{"create", "", "events", ns, ""},
				{"update", "", "services", ns, "svc"},
			},
		},
		"serverless": {
			user: ServerlessUser, groups: authenticated(),
			allow: []call{
				{"list", "serverless.minik8s.io", "functions", "", ""}, {"watch", "serverless.minik8s.io", "functions", "", ""},
				{"patch", "serverless.minik8s.io", "functions/status", ns, "f"},
				{"list", "apps", "deployments", "", ""}, {"create", "apps", "deployments", ns, ""},
				{"update", "apps", "deployments", ns, "f"}, {"patch", "apps", "deployments/scale", ns, "f"},
				{"list", "", "pods", "", ""}, {"list", "", "nodes", "", ""},
				{"get", "serverless.minik8s.io", "workflows", ns, "w"},
				{"list", "serverless.minik8s.io", "workflowexecutions", "", ""},
				{"create", "serverless.minik8s.io", "workflowexecutions", ns, ""},
				{"patch", "serverless.minik8s.io", "workflowexecutions", ns, "x"},
				{"patch", "serverless.minik8s.io", "workflowexecutions/status", ns, "x"},
				{"create", "", "events", ns, ""}, {"patch", "", "events", ns, "e"},
			},
			deny: []call{
				{"update", "serverless.minik8s.io", "functions", ns, "f"},
				{"delete", "apps", "deployments", ns, "f"},
				{"create", "", "pods", ns, ""},
				{"get", "", "secrets", ns, "s"},
				{"update", "", "nodes", "", "n"},
				{"create", "coordination.k8s.io", "leases", system, ""},
			},
		},
		"kubelet": {
			user: "system:node:n1", groups: authenticated(NodesGroup), node: true,
			allow: []call{
				{"create", "", "nodes", "", ""}, {"get", "", "nodes", "", "n1"}, {"list", "", "nodes", "", ""},
				{"update", "", "nodes", "", "n1"}, {"patch", "", "nodes", "", "n1"},
				{"update", "", "nodes/status", "", "n1"},
				{"list", "", "pods", "", ""}, {"update", "", "pods/status", ns, "p"}, {"delete", "", "pods", ns, "p"},
				{"get", "", "configmaps", ns, "c"}, {"get", "", "secrets", ns, "s"},
				{"get", "", "persistentvolumeclaims", ns, "c"}, {"get", "", "persistentvolumes", "", "pv"},
				{"get", "coordination.k8s.io", "leases", nodeLease, "n1"},
				{"create", "coordination.k8s.io", "leases", nodeLease, ""},
				{"update", "coordination.k8s.io", "leases", nodeLease, "n1"},
				{"create", "", "events", ns, ""}, {"patch", "", "events", ns, "e"},
				{"create", "", "serviceaccounts/token", ns, "default"},
				{"list", "", "services", "", ""}, {"watch", "", "services", "", ""},
				{"create", "authentication.k8s.io", "selfsubjectreviews", "", ""},
			},
			deny: []call{
				{"create", "", "namespaces", "", ""},
				{"delete", "", "nodes", "", "n1"},
				{"update", "", "pods", ns, "p"},
				{"create", "", "secrets", ns, ""},
				{"create", "", "pods/exec", ns, "p"},
				{"update", "apps", "deployments", ns, "d"},
			},
		},
	}
}

func TestComponentRolesGrantWhatComponentsCall(t *testing.T) {
	for name, tc := range componentCases() {
		t.Run(name, func(t *testing.T) {
			grants := func(c call) bool {
				// A cluster-scoped call sees only ClusterRoles; a namespaced one also the
				// namespace's Roles.
				rules := rulesFor(tc.user, tc.groups, c.namespace)
				if tc.node {
					rules = append(rules, NodeRules()...)
				}
				return allowed(rules, c)
			}
			var refused, granted []string
			for _, c := range tc.allow {
				if !grants(c) {
					refused = append(refused, c.String())
				}
			}
			for _, c := range tc.deny {
				if grants(c) {
					granted = append(granted, c.String())
				}
			}
			if diff := cmp.Diff([]string(nil), refused); diff != "" {
				t.Errorf("calls the component makes are refused (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string(nil), granted); diff != "" {
				t.Errorf("calls the component never makes are granted (-want +got):\n%s", diff)
			}
		})
	}
}

// Every component identity the apiserver makes a credential for is bound to a role.
func TestEveryComponentIsBound(t *testing.T) {
	bound := map[string]bool{}
	for _, b := range ClusterRoleBindings() {
		for _, s := range b.Subjects {
			bound[s.Kind+"/"+s.Name] = true
		}
	}
	for _, c := range bootstrap.Components {
		t.Run(c.Name, func(t *testing.T) {
			if !bound["User/"+c.User] {
				t.Errorf("no default ClusterRoleBinding names user %s", c.User)
			}
		})
	}
}

// The garbage collector reads the metadata of every kind the scheme serves (events aside),
// patches owner references and finalizers, and deletes dependents.
func TestGarbageCollectorCoversEveryServedKind(t *testing.T) {
	rules := rulesFor(KubeControllerManagerUser, authenticated(), "")
	for _, r := range scheme.Resources {
		if r.Plural == "events" {
			continue
		}
		t.Run(r.GVR().String(), func(t *testing.T) {
			var refused []string
			for _, verb := range []string{"get", "list", "watch", "patch", "delete"} {
				if c := (call{verb, r.GVK.Group, r.Plural, "", ""}); !allowed(rules, c) {
					refused = append(refused, c.String())
				}
			}
			if diff := cmp.Diff([]string(nil), refused); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}

// APIs served outside shared/scheme's resources: reviews, TokenRequest, the metrics API,
// and RBAC itself.
var servedElsewhere = map[string]bool{
	"authentication.k8s.io/tokenreviews":             true,
	"authentication.k8s.io/selfsubjectreviews":       true,
	"authorization.k8s.io/subjectaccessreviews":      true,
	"authorization.k8s.io/localsubjectaccessreviews": true,
	"authorization.k8s.io/selfsubjectaccessreviews":  true,
	"authorization.k8s.io/selfsubjectrulesreviews":   true,
	"/serviceaccounts/token":                         true,
	"metrics.k8s.io/pods":                            true,
	"rbac.authorization.k8s.io/roles":                true,
	"rbac.authorization.k8s.io/rolebindings":         true,
	"rbac.authorization.k8s.io/clusterroles":         true,
	"rbac.authorization.k8s.io/clusterrolebindings":  true,
}

// A misspelt resource grants nothing and fails only when the component runs under
// enforcement: every resource a role names must be served.
func TestRolesNameServedResources(t *testing.T) {
	served := map[string]bool{}
	for _, r := range scheme.Served() {
		served[r.GVK.Group+"/"+r.Plural] = true
		for _, s := range r.Subresources {
			served[r.GVK.Group+"/"+r.Plural+"/"+s] = true
		}
	}
	roles := map[string][]rbacv1.PolicyRule{}
	for _, r := range ClusterRoles() {
		roles[r.Name] = r.Rules
	}
	for ns, rs := range NamespaceRoles() {
		for _, r := range rs {
			roles[ns+"/"+r.Name] = r.Rules
		}
	}
	for name, rules := range roles {
		t.Run(name, func(t *testing.T) {
			var unknown []string
			for _, r := range rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						if g == "*" || res == "*" {
							continue
						}
						key := g + "/" + res
						if !served[key] && !servedElsewhere[key] {
							unknown = append(unknown, key)
						}
					}
				}
			}
			if diff := cmp.Diff([]string(nil), unknown); diff != "" {
				t.Errorf("rules name resources minik8s does not serve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSystemNodeRoleHoldsNodeRules(t *testing.T) {
	for _, r := range ClusterRoles() {
		if r.Name == NodeRole {
			if diff := cmp.Diff(NodeRules(), r.Rules); diff != "" {
				t.Errorf("system:node rules (-want +got):\n%s", diff)
			}
			return
		}
	}
	t.Fatalf("no %s ClusterRole", NodeRole)
}
