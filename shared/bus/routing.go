package bus

import (
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

// RoutingKey is the topic key of one change. Words are lowercase:
//
//	pods with spec.nodeName set  pods.node.<node>.<event>   e.g. pods.node.worker_1.added
//	pods without a node          pods.unscheduled.<event>
//	nodes                        nodes.<node>.<event>
//	everything else              <resource>.<event>         e.g. deployments.modified
//
// where <node> is EncodeWord(node name) and <event> is added, modified or
// deleted. Namespaces are not in keys: no consumer filters on them, and the
// namespace travels in HeaderNamespace. object is the JSON of the object (the
// last stored one for a delete); it is read only for pods, and an undecodable
// pod routes as unscheduled, which the scheduler tolerates by re-reading.
func RoutingKey(resource, namespace, name string, object json.RawMessage, eventType string) string {
	_ = namespace // part of the identity callers pass; not routed on (see above)
	ev := strings.ToLower(eventType)
	switch resource {
	case "pods":
		var pod struct {
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(object, &pod); err != nil || pod.Spec.NodeName == "" {
			return "pods.unscheduled." + ev
		}
		return "pods.node." + EncodeWord(pod.Spec.NodeName) + "." + ev
	case "nodes":
		return "nodes." + EncodeWord(name) + "." + ev
	default:
		return resource + "." + ev
	}
}

// controllerResources are the resources the controller-manager reconciles or
// watches for its controllers (ReplicaSet, Deployment, HPA, Job, Endpoints,
// garbage collector, node lifecycle, Ingress, PV binding).
var controllerResources = []string{
	"pods", "nodes", "leases", "namespaces", "services", "endpoints",
	"replicasets", "deployments", "horizontalpodautoscalers", "jobs",
	"ingresses", "persistentvolumes", "persistentvolumeclaims",
}

// Bindings returns the topic patterns bound to a consumer's queue, and false
// for a queue name that is not in the table.
func Bindings(queue string) ([]string, bool) {
	switch {
	case queue == QueueScheduler:
		return []string{"pods.#", "nodes.#"}, true
	case queue == QueueControllerManager:
		out := make([]string, 0, len(controllerResources))
		for _, r := range controllerResources {
			out = append(out, r+".#")
		}
		return out, true
	case queue == QueueServerless:
		return []string{"functions.#", "workflows.#", "pods.#"}, true
	case strings.HasPrefix(queue, "kubelet.") && len(queue) > len("kubelet."):
		node := EncodeWord(strings.TrimPrefix(queue, "kubelet."))
		return []string{"pods.node." + node + ".*", "nodes." + node + ".*"}, true
	case strings.HasPrefix(queue, "kubeproxy.") && len(queue) > len("kubeproxy."):
		return []string{"services.*", "endpoints.*"}, true
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
