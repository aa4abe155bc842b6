package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// aggregatedRoles are admin, edit and view, whose rules the aggregation controller fills
// from every ClusterRole labelled aggregate-to-<name>, and the system:aggregate-to-* roles
// that hold the default rules. edit is labelled aggregate-to-admin and view aggregate-to-edit,
// so admin holds all of edit and edit all of view. The rules cover the kinds minik8s serves,
// with Kubernetes' split: view reads everything but Secrets and the streaming subresources,
// edit writes workloads but not RBAC, admin also grants access within a namespace.
func aggregatedRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "admin"},
			AggregationRule: aggregateFrom(AggregateToAdmin),
		},
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "edit", Labels: map[string]string{AggregateToAdmin: "true"}},
			AggregationRule: aggregateFrom(AggregateToEdit),
		},
		{
			ObjectMeta:      metav1.ObjectMeta{Name: "view", Labels: map[string]string{AggregateToEdit: "true"}},
			AggregationRule: aggregateFrom(AggregateToView),
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-admin", Labels: map[string]string{AggregateToAdmin: "true"}},
			Rules: []rbacv1.PolicyRule{
				// Whether someone else may do something in this namespace.
				rule("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
				// Granting access within the namespace (escalation checks still apply).
				rule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-edit", Labels: map[string]string{AggregateToEdit: "true"}},
			Rules: []rbacv1.PolicyRule{
				// Reading what view leaves out because it reveals or reaches into workloads.
				rule(read...).groups(legacyGroup).resources("pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy").rule(),
				rule("impersonate").groups(legacyGroup).resources("serviceaccounts").rule(),

				// Not pods/ephemeralcontainers, as upstream: a debug container escapes policies
				// written for pods' own containers, so administrators grant it on purpose.
				rule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy").rule(),
				rule("create").groups(legacyGroup).resources("pods/eviction").rule(),
				// Endpoints and EndpointSlices stay read-only: writing them redirects a
				// Service's traffic anywhere (CVE-2021-25740).
				rule(write...).groups(legacyGroup).resources("serviceaccounts", "services", "services/proxy", "persistentvolumeclaims",
					"configmaps", "secrets", "events").rule(),
				rule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale").rule(),
				// The same Events, through the newer API.
				rule(write...).groups(eventsGroup).resources("events").rule(),
				rule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),

				rule(write...).groups(appsGroup).resources("daemonsets", "deployments", "deployments/scale", "replicasets", "replicasets/scale",
					"statefulsets", "statefulsets/scale").rule(),
				rule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
				rule(write...).groups(batchGroup).resources("jobs", "cronjobs").rule(),
				rule(write...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
				rule(write...).groups(networkingGroup).resources("ingresses", "networkpolicies").rule(),
				rule(readWrite...).groups(coordinationGroup).resources("leases").rule(),

				rule(write...).groups(serverlessGroup).resources("functions", "workflows", "workflowexecutions").rule(),
				// Calling a function or a workflow through the API.
				rule("create").groups(serverlessGroup).resources("functions/invoke", "workflows/invoke").rule(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", Labels: map[string]string{AggregateToView: "true"}},
			Rules: []rbacv1.PolicyRule{
				rule(read...).groups(legacyGroup).resources("pods", "serviceaccounts", "services", "services/status",
					"endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").rule(),
				rule(read...).groups(legacyGroup).resources("events", "pods/status", "namespaces/status", "pods/log").rule(),
				// The bounds set on the namespace, which only cluster administrators write.
				rule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "resourcequotas/status").rule(),
				rule(read...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "replicationcontrollers/status").rule(),
				// Reading namespaces at namespace scope reads this namespace: a sign of which
				// namespaces one has access to.
				rule(read...).groups(legacyGroup).resources("namespaces").rule(),
				rule(read...).groups(discoveryGroup).resources("endpointslices").rule(),
				rule(read...).groups(eventsGroup).resources("events").rule(),
				rule(read...).groups(appsGroup).resources("controllerrevisions", "daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
					"replicasets", "replicasets/status", "replicasets/scale", "statefulsets", "statefulsets/status", "statefulsets/scale").rule(),
				rule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
				rule(read...).groups(batchGroup).resources("jobs", "jobs/status", "cronjobs", "cronjobs/status").rule(),
				rule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
				rule(read...).groups(networkingGroup).resources("ingresses", "ingresses/status", "networkpolicies").rule(),
				rule(read...).groups(serverlessGroup).resources("functions", "functions/status", "workflows", "workflows/status",
					"workflowexecutions", "workflowexecutions/status").rule(),
			},
		},
	}
}

// aggregateFrom selects the ClusterRoles labelled label=true.
func aggregateFrom(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
}
