package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/scheme"
)

// Leader election Leases, as the scheduler's --leader-elect-resource-namespace and
// --leader-elect-resource-name and the controller-manager's constants name them.
const (
	LeaderElectionNamespace    = metav1.NamespaceSystem
	SchedulerLeaseName         = "kube-scheduler"
	ControllerManagerLeaseName = "kube-controller-manager"
)

// The leader-locking Roles, and their RoleBindings of the same names, as Kubernetes calls them.
const (
	schedulerLeaderLocking  = "system::leader-locking-kube-scheduler"
	controllerLeaderLocking = "system::leader-locking-kube-controller-manager"
)

// Components read through shared informers, which list (and, without the bus, could
// watch): a watch shows nothing a list does not, so every cache gets both verbs.
var cache = []string{"list", "watch"}

// componentRoles are the least-privilege roles of the minik8s components. Each rule says
// which part of the component makes the calls it allows; a call not here is refused.
func componentRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: SchedulerRole}, Rules: SchedulerRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: ControllerRole}, Rules: ControllerManagerRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: NodeProxierRole}, Rules: NodeProxierRules()},
		{ObjectMeta: metav1.ObjectMeta{Name: ServerlessRole}, Rules: ServerlessRules()},
	}
}

// SchedulerRules are what the scheduler (scheduler/internal/app, scheduler/internal/scheduler)
// does outside its leader election Lease, which the kube-system Role grants.
func SchedulerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Scheduled and FailedScheduling.
		eventsRule(),
		// The pod and node caches, and the catch-up list a new leader makes of both.
		rule(cache...).groups(legacyGroup).resources("pods", "nodes").rule(),
		// The volume binding filter reads claims and volumes from caches.
		rule(cache...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		// Binding a pod to its node.
		rule("create").groups(legacyGroup).resources("pods/binding").rule(),
		// The PodScheduled condition of a pod that fits nowhere.
		rule("update").groups(legacyGroup).resources("pods/status").rule(),
	}
}

// ControllerManagerRules are what the controllers of controller/internal do, by controller
// (the names of --controllers), outside the leader election Lease.
func ControllerManagerRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		// Every controller's recorder.
		eventsRule(),

		// deployment: owns ReplicaSets, adopting (patch) and releasing them; annotates
		// Deployments (patch) and writes their status.
		rule(cache...).groups(appsGroup).resources("deployments", "replicasets").rule(),
		rule(cache...).groups(legacyGroup).resources("pods").rule(),
		rule("get", "patch").groups(appsGroup).resources("deployments").rule(),
		rule("update").groups(appsGroup).resources("deployments/status").rule(),
		rule("get", "create", "update", "patch", "delete").groups(appsGroup).resources("replicasets").rule(),

		// replicaset: creates, adopts (patch) and deletes pods; writes ReplicaSet status.
		rule("get").groups(appsGroup).resources("replicasets").rule(),
		rule("update").groups(appsGroup).resources("replicasets/status").rule(),
		rule("create", "patch", "delete").groups(legacyGroup).resources("pods").rule(),

		// replicationcontroller: the same for ReplicationControllers.
		rule(cache...).groups(legacyGroup).resources("replicationcontrollers").rule(),
		rule("get").groups(legacyGroup).resources("replicationcontrollers").rule(),
		rule("update").groups(legacyGroup).resources("replicationcontrollers/status").rule(),

		// statefulset: creates, patches (adoption, identity, labels) and deletes its pods and
		// their claims (owner references from the retention policy); keeps its
		// ControllerRevisions; writes StatefulSet status.
		rule(cache...).groups(appsGroup).resources("statefulsets", "controllerrevisions").rule(),
		rule("get").groups(appsGroup).resources("statefulsets").rule(),
		rule("update").groups(appsGroup).resources("statefulsets/status").rule(),
		rule("get", "create", "update", "patch", "delete").groups(appsGroup).resources("controllerrevisions").rule(),
		rule("create", "patch", "delete").groups(legacyGroup).resources("persistentvolumeclaims").rule(),

		// daemonset: one pod per node (creates, adopts, deletes), a ControllerRevision per
		// template; writes DaemonSet status.
		rule(cache...).groups(appsGroup).resources("daemonsets").rule(),
		rule("update").groups(appsGroup).resources("daemonsets/status").rule(),

		// job: creates and deletes its pods; writes Job status.
		rule(cache...).groups(batchGroup).resources("jobs").rule(),
		rule("update").groups(batchGroup).resources("jobs/status").rule(),

		// ttl-after-finished: re-reads a finished Job and deletes it.
		rule("get", "delete").groups(batchGroup).resources("jobs").rule(),

		// cronjob: makes Jobs from CronJobs on schedule, deletes the ones past the history
		// limits or replaced, and writes CronJob status.
		rule(cache...).groups(batchGroup).resources("cronjobs").rule(),
		rule("update").groups(batchGroup).resources("cronjobs/status").rule(),
		rule("create").groups(batchGroup).resources("jobs").rule(),

		// disruption: counts the healthy pods of each PodDisruptionBudget, finding how many
		// are expected through their controllers' scale, and writes the budget's status.
		rule(cache...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
		rule("update").groups(policyGroup).resources("poddisruptionbudgets/status").rule(),

		// resourcequota: recounts each quota's usage from the objects of its namespace (every
		// kind's metadata, read as the garbage collector's below) and writes its status.
		rule(cache...).groups(legacyGroup).resources("resourcequotas", "services", "persistentvolumeclaims").rule(),
		rule("update").groups(legacyGroup).resources("resourcequotas/status").rule(),

		// endpoint: Endpoints of each Service from its pods.
		rule(cache...).groups(legacyGroup).resources("services", "endpoints").rule(),
		rule("create", "update", "delete").groups(legacyGroup).resources("endpoints").rule(),

		// endpointslice: EndpointSlices of each Service, with the pods' node zones.
		rule(cache...).groups(legacyGroup).resources("nodes").rule(),
		rule(cache...).groups(discoveryGroup).resources("endpointslices").rule(),
		rule("create", "update", "delete").groups(discoveryGroup).resources("endpointslices").rule(),

		// nodelifecycle: marks nodes whose Lease stopped (status and taints), marks their
		// pods not ready and evicts them by deleting.
		rule(cache...).groups(coordinationGroup).resources("leases").rule(),
		rule("get", "update").groups(legacyGroup).resources("nodes").rule(),
		rule("update").groups(legacyGroup).resources("nodes/status", "pods/status").rule(),

		// horizontalpodautoscaling: reads pod metrics and scales its targets through their
		// scale subresource; writes HPA status.
		rule(cache...).groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
		rule("update").groups(autoscalingGroup).resources("horizontalpodautoscalers/status").rule(),
		rule("list").groups(metricsGroup).resources("pods").rule(),
	}
	rules = append(rules, schemeRules([]string{"get", "update"}, func(r *scheme.Resource) (string, bool) {
		return r.Plural + "/scale", r.HasSubresource("scale")
	})...)
	// A target may also be a custom resource with a scale subresource, of any group, as
	// Kubernetes' horizontal-pod-autoscaler role allows.
	rules = append(rules, rule("get", "update").groups("*").resources("*/scale").rule())
	rules = append(rules,
		// ingress: runs nginx pods (and their namespace and Service) for the Ingresses,
		// hands each pod its configuration through pods/exec (a WebSocket GET, or SPDY's
		// POST where the upgrade is refused), notes what a pod was given (patch), keeps the
		// rendered configuration in a ConfigMap, and writes Ingress status; reads the
		// IngressClasses and makes its own at start.
		rule(cache...).groups(networkingGroup).resources("ingresses", "ingressclasses").rule(),
		rule("create").groups(networkingGroup).resources("ingressclasses").rule(),
		rule("update").groups(networkingGroup).resources("ingresses/status").rule(),
		rule("get", "create").groups(legacyGroup).resources("namespaces").rule(),
		rule("create").groups(legacyGroup).resources("services").rule(),
		rule("get", "create").groups(legacyGroup).resources("pods/exec").rule(),
		rule("get", "create", "update").groups(legacyGroup).resources("configmaps").rule(),

		// persistentvolume-binder: binds claims to volumes, provisions and deletes volumes,
		// and makes the default StorageClass.
		rule(cache...).groups(legacyGroup).resources("persistentvolumes", "persistentvolumeclaims").rule(),
		rule(cache...).groups(storageGroup).resources("storageclasses").rule(),
		rule("create", "update", "delete").groups(legacyGroup).resources("persistentvolumes").rule(),
		rule("get", "update").groups(legacyGroup).resources("persistentvolumeclaims").rule(),
		rule("update").groups(legacyGroup).resources("persistentvolumes/status", "persistentvolumeclaims/status").rule(),
		rule("create").groups(storageGroup).resources("storageclasses").rule(),

		// root-ca-cert-publisher: kube-root-ca.crt in every namespace, made and kept.
		rule(cache...).groups(legacyGroup).resources("namespaces", "configmaps").rule(),
		rule("create", "update").groups(legacyGroup).resources("configmaps").rule(),

		// clusterrole-aggregation: copies the rules of the selected ClusterRoles into the
		// aggregated ones, which is granting them: hence escalate.
		rule("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").rule(),
	)
	// garbagecollector: every kind's metadata (events aside: nothing owns them), re-read
	// before acting, owner references and finalizers patched, dependents deleted.
	rules = append(rules, schemeRules([]string{"get", "list", "watch", "patch", "delete"}, func(r *scheme.Resource) (string, bool) {
		return r.Plural, r.Plural != "events"
	})...)
	// An owner or a dependent may be of any kind a CustomResourceDefinition serves: the
	// collector reads owners to learn whether they are still there, lists custom objects,
	// patches their owner references and finalizers and deletes them, as Kubernetes'
	// collector may in every group.
	return append(rules, rule("get", "list", "patch", "delete").groups("*").resources("*").rule())
}

// NodeProxierRules are what kubeproxy (kubeproxy/internal/app) reads: the proxier's Services
// and EndpointSlices, and the Ingresses whose hosts the cluster DNS answers.
func NodeProxierRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(cache...).groups(legacyGroup).resources("services").rule(),
		rule(cache...).groups(discoveryGroup).resources("endpointslices").rule(),
		rule(cache...).groups(networkingGroup).resources("ingresses").rule(),
	}
}

// ServerlessRules are what the serverless component (serverless/internal) does.
func ServerlessRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// The function controller's build and rollout events.
		eventsRule(),
		// The function controller runs each Function as a Deployment; the autoscaler
		// scales it, and records what it decided in the Function's status.
		rule(cache...).groups(serverlessGroup).resources("functions").rule(),
		rule("patch").groups(serverlessGroup).resources("functions/status").rule(),
		rule(cache...).groups(appsGroup).resources("deployments").rule(),
		rule("create", "update").groups(appsGroup).resources("deployments").rule(),
		rule("patch").groups(appsGroup).resources("deployments/scale").rule(),
		// The gateway sends calls to the functions' ready pods; built images go to the
		// ready nodes.
		rule(cache...).groups(legacyGroup).resources("pods", "nodes").rule(),
		// Workflows: the gateway reads the Workflow it runs and records each run as a
		// WorkflowExecution, patching its progress and status.
		rule("get").groups(serverlessGroup).resources("workflows").rule(),
		rule(cache...).groups(serverlessGroup).resources("workflowexecutions").rule(),
		rule("create", "patch").groups(serverlessGroup).resources("workflowexecutions").rule(),
		rule("patch").groups(serverlessGroup).resources("workflowexecutions/status").rule(),
	}
}

// NodeRules are what a kubelet may do: Kubernetes' node rules, less the kinds minik8s does
// not serve (CertificateSigningRequests, CSI, RuntimeClasses, DRA, and the Endpoints only
// glusterfs volumes read). The Node authorizer applies them after narrowing Secrets,
// ConfigMaps, claims, volumes, ServiceAccount tokens and Leases to the node's own, and
// NodeRestriction narrows the writes to the node's own Node and pods.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Checking callers of the kubelet's API. These creates change nothing.
		rule("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		rule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),

		// Service environment variables (KUBERNETES_SERVICE_HOST and the service links).
		rule(read...).groups(legacyGroup).resources("services").rule(),

		// Registering the Node and reporting its status.
		rule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
		rule("update", "patch").groups(legacyGroup).resources("nodes/status").rule(),
		rule("update", "patch").groups(legacyGroup).resources("nodes").rule(),

		rule("create", "update", "patch").groups(legacyGroup).resources("events").rule(),

		// The pods bound to the node, their status, their deletion once terminated, and
		// evictions.
		rule(read...).groups(legacyGroup).resources("pods").rule(),
		rule("create", "delete").groups(legacyGroup).resources("pods").rule(),
		rule("update", "patch").groups(legacyGroup).resources("pods/status").rule(),
		rule("create").groups(legacyGroup).resources("pods/eviction").rule(),

		// Volumes and environment variables from Secrets and ConfigMaps, and persistent
		// volumes.
		rule("get", "list", "watch").groups(legacyGroup).resources("secrets", "configmaps").rule(),
		rule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		rule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").rule(),

		// The node's heartbeat Lease in kube-node-lease.
		rule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").rule(),

		// Tokens of projected serviceAccountToken volumes.
		rule("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
	}
}

// NamespaceRoles are the default Roles by namespace: the Lease each elected component
// competes for in kube-system, and nothing else there.
func NamespaceRoles() map[string][]rbacv1.Role {
	roles := []rbacv1.Role{
		leaderLockingRole(schedulerLeaderLocking, SchedulerLeaseName),
		leaderLockingRole(controllerLeaderLocking, ControllerManagerLeaseName),
	}
	for i := range roles {
		addDefaultMetadata(&roles[i].ObjectMeta)
	}
	return map[string][]rbacv1.Role{LeaderElectionNamespace: roles}
}

// NamespaceRoleBindings are the default RoleBindings by namespace.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding {
	bindings := []rbacv1.RoleBinding{
		roleBinding(schedulerLeaderLocking, userSubject(KubeSchedulerUser)),
		roleBinding(controllerLeaderLocking, userSubject(KubeControllerManagerUser)),
	}
	for i := range bindings {
		addDefaultMetadata(&bindings[i].ObjectMeta)
	}
	return map[string][]rbacv1.RoleBinding{LeaderElectionNamespace: bindings}
}

// leaderLockingRole lets a candidate make the Lease name and then read and renew only it:
// shared/leaderelection gets, creates and updates it, and never lists or watches.
func leaderLockingRole(role, lease string) rbacv1.Role {
	return rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: LeaderElectionNamespace, Name: role},
		Rules: []rbacv1.PolicyRule{
			// A create's name is not known to the authorizer, so it cannot be narrowed.
			rule("create").groups(coordinationGroup).resources("leases").rule(),
			rule("get", "update").groups(coordinationGroup).resources("leases").names(lease).rule(),
		},
	}
}

// roleBinding binds the kube-system Role of the same name to subjects.
func roleBinding(role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: LeaderElectionNamespace, Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}

// schemeRules grants verbs on what pick returns for each served resource it accepts, one
// rule per API group in the scheme's order: rules that follow the kinds minik8s serves.
func schemeRules(verbs []string, pick func(r *scheme.Resource) (string, bool)) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	at := map[string]int{}
	for _, r := range scheme.Resources {
		name, ok := pick(r)
		if !ok {
			continue
		}
		g := r.GVK.Group
		i, seen := at[g]
		if !seen {
			i = len(rules)
			at[g] = i
			rules = append(rules, rule(verbs...).groups(g).rule())
		}
		rules[i].Resources = append(rules[i].Resources, name)
	}
	return rules
}
