package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every default object carries this label and annotation, as Kubernetes' do: the label finds
// them (kubectl get clusterroles -l kubernetes.io/bootstrapping=rbac-defaults), and the
// annotation lets an administrator stop reconciliation of one by setting it to "false".
const (
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	BootstrappingValue = "rbac-defaults"
)

// Labels that aggregate a ClusterRole's rules into admin, edit and view.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// Identities the default bindings name.
const (
	MastersGroup         = "system:masters"
	AuthenticatedGroup   = "system:authenticated"
	UnauthenticatedGroup = "system:unauthenticated"
	MonitoringGroup      = "system:monitoring"
	NodesGroup           = "system:nodes"
	ServiceAccountsGroup = "system:serviceaccounts"

	KubeSchedulerUser         = "system:kube-scheduler"
	KubeControllerManagerUser = "system:kube-controller-manager"
	KubeProxyUser             = "system:kube-proxy"
	ServerlessUser            = "system:serverless"
)

// Names of the roles other parts of the apiserver refer to.
const (
	ClusterAdminRole = "cluster-admin"
	NodeRole         = "system:node"
	SchedulerRole    = "system:kube-scheduler"
	ControllerRole   = "system:kube-controller-manager"
	NodeProxierRole  = "system:node-proxier"
	ServerlessRole   = "system:serverless"
	// KubeletAPIAdminRole reaches every node's kubelet through nodes/proxy.
	KubeletAPIAdminRole = "system:kubelet-api-admin"
)

// ClusterRoles are the default ClusterRoles, labelled and annotated for reconciliation.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		{
			// Anything at all: bound to system:masters.
			ObjectMeta: metav1.ObjectMeta{Name: ClusterAdminRole},
			Rules: []rbacv1.PolicyRule{
				rule("*").groups("*").resources("*").rule(),
				rule("*").urls("*").rule(),
			},
		},
		{
			// Enough to find out whether the server is up and which APIs it serves.
			ObjectMeta: metav1.ObjectMeta{Name: "system:discovery"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
					"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*").rule(),
			},
		},
		{
			// What any user may ask about themselves: who am I, what may I do.
			ObjectMeta: metav1.ObjectMeta{Name: "system:basic-user"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authenticationGroup).resources("selfsubjectreviews").rule(),
				rule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
			},
		},
		{
			// Insensitive facts anyone may read, signed in or not.
			ObjectMeta: metav1.ObjectMeta{Name: "system:public-info-viewer"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").rule(),
			},
		},
		{
			// What a metrics scraper reads.
			ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
					"/livez/*", "/readyz/*", "/healthz/*").rule(),
			},
		},
		{
			// The OIDC discovery documents of the ServiceAccount token issuer: every
			// ServiceAccount may read them (the issuer is in its own token already).
			ObjectMeta: metav1.ObjectMeta{Name: "system:service-account-issuer-discovery"},
			Rules: []rbacv1.PolicyRule{
				rule("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
					"/openid/v1/jwks", "/openid/v1/jwks/").rule(),
			},
		},
		{
			// For servers that delegate authentication and authorization to the apiserver;
			// bound to nobody by default.
			ObjectMeta: metav1.ObjectMeta{Name: "system:auth-delegator"},
			Rules: []rbacv1.PolicyRule{
				rule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
				rule("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			},
		},
		{
			// Everything the kubelet API offers through the apiserver (nodes/proxy), which
			// no aggregated role grants; bound to nobody by default.
			ObjectMeta: metav1.ObjectMeta{Name: KubeletAPIAdminRole},
			Rules: []rbacv1.PolicyRule{
				rule("get", "list", "watch", "proxy").groups(legacyGroup).resources("nodes").rule(),
				rule("*").groups(legacyGroup).resources("nodes/proxy").rule(),
			},
		},
		{
			// What kubelets may do. The Node authorizer applies these rules itself, and
			// narrows them to each node's own objects, so the default binding is empty.
			ObjectMeta: metav1.ObjectMeta{Name: NodeRole},
			Rules:      NodeRules(),
		},
	}
	roles = append(roles, aggregatedRoles()...)
	roles = append(roles, componentRoles()...)
	for i := range roles {
		addDefaultMetadata(&roles[i].ObjectMeta)
	}
	return roles
}

// ClusterRoleBindings are the default ClusterRoleBindings, labelled and annotated for
// reconciliation.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterBinding(ClusterAdminRole, groupSubject(MastersGroup)),
		clusterBinding("system:discovery", groupSubject(AuthenticatedGroup)),
		clusterBinding("system:basic-user", groupSubject(AuthenticatedGroup)),
		clusterBinding("system:public-info-viewer", groupSubject(AuthenticatedGroup), groupSubject(UnauthenticatedGroup)),
		clusterBinding("system:monitoring", groupSubject(MonitoringGroup)),
		clusterBinding("system:service-account-issuer-discovery", groupSubject(ServiceAccountsGroup)),
		// Nodes are authorized by the Node authorizer, not through RBAC: Kubernetes keeps
		// this binding with no subjects, and so do we.
		clusterBinding(NodeRole),
		clusterBinding(NodeProxierRole, userSubject(KubeProxyUser)),
		clusterBinding(SchedulerRole, userSubject(KubeSchedulerUser)),
		clusterBinding(ControllerRole, userSubject(KubeControllerManagerUser)),
		clusterBinding(ServerlessRole, userSubject(ServerlessUser)),
	}
	for i := range bindings {
		addDefaultMetadata(&bindings[i].ObjectMeta)
	}
	return bindings
}

// clusterBinding binds the ClusterRole of the same name to subjects.
func clusterBinding(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

// addDefaultMetadata marks a default object: the bootstrapping label, and autoupdate "true".
func addDefaultMetadata(m *metav1.ObjectMeta) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[BootstrappingLabel] = BootstrappingValue
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[rbacv1.AutoUpdateAnnotationKey] = "true"
}
