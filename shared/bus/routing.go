package bus

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Queue names of the cluster-wide consumers. Per-node consumers use
// KubeletQueue and KubeproxyQueue.
const (
	QueueScheduler         = "scheduler"
	QueueControllerManager = "controller-manager"
	QueueServerless        = "serverless"
)

// KubeletQueue is the queue of the kubelet on node.
func KubeletQueue(node string) string { return "kubelet." + node }

// KubeproxyQueue is the queue of the kube-proxy on node.
func KubeproxyQueue(node string) string { return "kubeproxy." + node }

// EncodeWord turns a name into a single routing-key word. Node names are DNS
// subdomains and may contain dots, which separate words in AMQP topic keys, so
// dots become underscores; DNS names never contain an underscore, which makes
// the mapping reversible (DecodeWord).
func EncodeWord(name string) string { return strings.ReplaceAll(name, ".", "_") }

// DecodeWord reverses EncodeWord.
func DecodeWord(word string) string { return strings.ReplaceAll(word, "_", ".") }

// StatusWord is the event word of a pod change that touched nothing but the pod's status
// and did not move it into or out of a terminal phase (Succeeded, Failed): what a kubelet
// writes as containers start and probes pass. The body's type stays MODIFIED. Consumers that
// only account for where pods run and what they request (the scheduler) bind around it;
// consumers that follow status (the controller-manager, serverless, the kubelet) take it.
const StatusWord = "status"

// RoutingKey is the topic key of one change. Words are lowercase:
//
//	pods with spec.nodeName set  pods.node.<node>.<event>   e.g. pods.node.worker_1.added
//	pods without a node          pods.unscheduled.<event>
//	nodes                        nodes.<node>.<event>
//	everything else              <resource>.<event>         e.g. deployments.modified
//
// where <resource> is EncodeWord(resource): built-in plurals have no dots, and a custom
// resource, named plural.group (echoapps.demo.minik8s.io), stays one word
// (echoapps_demo_minik8s_io); <node> is EncodeWord(node name) and <event> is added, modified or deleted, or, for a
// pod, StatusWord when prev shows the change was status-only. Namespaces are not in keys: no
// consumer filters on them, and the namespace travels in HeaderNamespace. object is the JSON
// of the object (the last stored one for a delete); prev is the JSON stored before a
// modification, or nil when it is unknown or the change is not one (then a pod's change counts
// as modified). Both are read only for pods; an undecodable pod routes as unscheduled and
// modified, which every consumer of pods takes.
func RoutingKey(resource, namespace, name string, object, prev json.RawMessage, eventType string) string {
	_ = namespace // part of the identity callers pass; not routed on (see above)
	ev := strings.ToLower(eventType)
	switch resource {
	case "pods":
		var pod podShape
		if err := json.Unmarshal(object, &pod); err != nil {
			return "pods.unscheduled." + ev
		}
		var spec struct {
			NodeName string `json:"nodeName"`
		}
		if err := json.Unmarshal(pod.Spec, &spec); err != nil && len(pod.Spec) > 0 {
			return "pods.unscheduled." + ev
		}
		if ev == "modified" && statusOnly(&pod, prev) {
			ev = StatusWord
		}
		if spec.NodeName == "" {
			return "pods.unscheduled." + ev
		}
		return "pods.node." + EncodeWord(spec.NodeName) + "." + ev
	case "nodes":
		return "nodes." + EncodeWord(name) + "." + ev
	default:
		return EncodeWord(resource) + "." + ev
	}
}

// podShape is what routing reads of a stored pod: metadata and spec raw, to compare them
// byte for byte with the previous value (the apiserver stores the JSON of typed structs, so
// equal objects are equal bytes), and the phase.
type podShape struct {
	Metadata json.RawMessage `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
	Status   struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// statusOnly reports whether pod differs from prev in its status alone, without entering or
// leaving a terminal phase. Unknown or undecodable prev counts as a full modification.
func statusOnly(pod *podShape, prev json.RawMessage) bool {
	if len(prev) == 0 {
		return false
	}
	var old podShape
	if err := json.Unmarshal(prev, &old); err != nil {
		return false
	}
	return bytes.Equal(pod.Metadata, old.Metadata) && bytes.Equal(pod.Spec, old.Spec) &&
		terminal(pod.Status.Phase) == terminal(old.Status.Phase)
}

func terminal(phase string) bool { return phase == "Succeeded" || phase == "Failed" }

// RetiredBindings returns the patterns a queue had in an earlier version and must lose (see
// Subscription.Unbind).
func RetiredBindings(queue string) []string {
	if queue == QueueScheduler {
		// Before status-only pod changes had a word of their own, the scheduler took them all.
		return []string{"pods.#"}
	}
	return nil
}

// controllerResources are the resources the controller-manager reconciles or
// watches for its controllers (ReplicaSet, Deployment, StatefulSet, DaemonSet, HPA, Job,
// Endpoints, garbage collector, node lifecycle, Ingress, PV binding, CronJob, disruption,
// ClusterRole aggregation, resource quota, the root CA publisher). An informer of a resource missing here still works, from
// its periodic relists alone.
var controllerResources = []string{
	"pods", "nodes", "leases", "namespaces", "services", "endpoints", "endpointslices",
	"replicasets", "deployments", "statefulsets", "daemonsets", "horizontalpodautoscalers", "jobs", "controllerrevisions",
	"cronjobs", "poddisruptionbudgets", "resourcequotas",
	"ingresses", "persistentvolumes", "persistentvolumeclaims", "storageclasses", "clusterroles",
	// The garbage collector follows the owner references of every kind but events.
	"configmaps", "secrets", "serviceaccounts", "functions", "workflows", "workflowexecutions",
	"roles", "rolebindings", "clusterrolebindings", "priorityclasses", "replicationcontrollers", "networkpolicies", "ingressclasses",
	"limitranges", "customresourcedefinitions", "validatingwebhookconfigurations", "mutatingwebhookconfigurations",
}

// CustomDeletedBinding is the controller-manager's binding for the deletions of custom
// resources' objects.
const CustomDeletedBinding = "*.deleted"

// Bindings returns the topic patterns bound to a consumer's queue, and false
// for a queue name that is not in the table.
func Bindings(queue string) ([]string, bool) {
	switch {
	case queue == QueueScheduler:
		// Everything about pods but their status-only changes: the scheduler accounts for
		// where pods run and what they request, and a third of all pod changes are kubelets
		// reporting progress.
		// Claims and volumes: a pod waits for its claims to be bound, and a bound volume
		// may limit the nodes.
		return []string{"pods.unscheduled.*", "pods.node.*.added", "pods.node.*.modified", "pods.node.*.deleted", "nodes.#",
			"persistentvolumeclaims.#", "persistentvolumes.#"}, true
	case queue == QueueControllerManager:
		out := make([]string, 0, len(controllerResources)+1)
		for _, r := range controllerResources {
			out = append(out, r+".#")
		}
		// The garbage collector learns of deleted custom objects, whose dependents it collects.
		// A pattern cannot tell a custom resource's word (it has an underscore) from a built-in
		// plural, so the unbound built-in kinds' deletions come too (events'), and nobody caches
		// them; a message matching two bindings reaches the queue once.
		return append(out, CustomDeletedBinding), true
	case queue == QueueServerless:
		// Functions' Deployments (ready pods in status), pods (the gateway's endpoints), nodes
		// (where function images go).
		return []string{"functions.#", "workflows.#", "workflowexecutions.#", "pods.#", "deployments.#", "nodes.#"}, true
	case strings.HasPrefix(queue, "kubelet.") && len(queue) > len("kubelet."):
		// Its own pods, every node (routes to other nodes' pod CIDRs follow Node objects),
		// and Services, whose variables containers get when they start.
		node := EncodeWord(strings.TrimPrefix(queue, "kubelet."))
		return []string{"pods.node." + node + ".*", "nodes.*.*", "services.*"}, true
	case strings.HasPrefix(queue, "kubeproxy.") && len(queue) > len("kubeproxy."):
		// Services and their endpoints for the rules and DNS, Ingresses for the hosts file.
		return []string{"services.*", "endpoints.*", "endpointslices.*", "ingresses.*"}, true
	}
	return nil, false
}

// Match reports whether an AMQP topic pattern matches a routing key: words are
// separated by dots, "*" matches exactly one word and "#" zero or more.
func Match(pattern, key string) bool {
	return match(strings.Split(pattern, "."), strings.Split(key, "."))
}

func match(p, k []string) bool {
	for len(p) > 0 {
		switch p[0] {
		case "#":
			// Try every split point; patterns are short, so this stays cheap.
			for i := 0; i <= len(k); i++ {
				if match(p[1:], k[i:]) {
					return true
				}
			}
			return false
		case "*":
			if len(k) == 0 {
				return false
			}
		default:
			if len(k) == 0 || k[0] != p[0] {
				return false
			}
		}
		p, k = p[1:], k[1:]
	}
	return len(k) == 0
}
