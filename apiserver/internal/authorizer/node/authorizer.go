package node

import (
	"context"
	"errors"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/selection"

	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/apiserver/internal/authorizer/rbac"
)

// Graph is what the authorizer knows of pods and volumes. A lookup of something missing
// returns an error, which refuses the request like any unrelated object.
type Graph interface {
	// PodsOnNode returns the pods whose spec.nodeName is node.
	PodsOnNode(node string) ([]*corev1.Pod, error)
	PersistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	PersistentVolume(name string) (*corev1.PersistentVolume, error)
}

// NodeLeaseNamespace holds the kubelets' heartbeat Leases, one named after each node.
const NodeLeaseNamespace = corev1.NamespaceNodeLease

// Authorizer is the Node authorizer. It has no opinion on users that are not nodes.
type Authorizer struct {
	graph Graph
	rules []rbacv1.PolicyRule
}

var (
	_ authorizer.Authorizer   = (*Authorizer)(nil)
	_ authorizer.RuleResolver = (*Authorizer)(nil)
)

// New builds the authorizer; rules are what every node may do to the resources the
// authorizer does not decide on object by object.
func New(graph Graph, rules []rbacv1.PolicyRule) *Authorizer {
	return &Authorizer{graph: graph, rules: rules}
}

// RulesFor implements authorizer.RuleResolver: a node's permissions depend on its pods, so
// they cannot be listed.
func (a *Authorizer) RulesFor(_ context.Context, u authorizer.User, _ string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	if _, isNode := authorizer.NodeIdentity(u); isNode {
		return nil, nil, true, errors.New("node authorizer does not support user rule resolution")
	}
	return nil, nil, false, nil
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	node, isNode := authorizer.NodeIdentity(attrs.User)
	if !isNode {
		return authorizer.NoOpinion, "", nil
	}
	if node == "" {
		return authorizer.NoOpinion, fmt.Sprintf("unknown node for user %q", attrs.User.Name), nil
	}
	if attrs.ResourceRequest {
		switch attrs.APIGroup + "/" + attrs.Resource {
		case "/secrets":
			return a.authorizeRead(node, secrets, attrs)
		case "/configmaps":
			return a.authorizeRead(node, configMaps, attrs)
		case "/persistentvolumeclaims":
			if attrs.Subresource == "status" {
				return a.authorizeStatusUpdate(node, claims, attrs)
			}
			return a.authorizeGet(node, claims, attrs)
		case "/persistentvolumes":
			return a.authorizeGet(node, volumes, attrs)
		case "/serviceaccounts":
			return a.authorizeCreateToken(node, attrs)
		case "coordination.k8s.io/leases":
			return authorizeLease(node, attrs)
		case "/nodes":
			return authorizeNode(node, attrs)
		case "/pods":
			return a.authorizePod(node, attrs)
		}
	}
	if rbac.RulesAllow(attrs, a.rules...) {
		return authorizer.Allow, "", nil
	}
	return authorizer.NoOpinion, "", nil
}

// kind is a kind of object the authorizer relates to a node through its pods.
type kind int

const (
	secrets kind = iota
	configMaps
	claims
	volumes
	serviceAccounts
	pods
)

// authorizeRead allows get, list and watch of one named object (a list or watch names it
// by a metadata.name field selector) related to the node.
func (a *Authorizer) authorizeRead(node string, k kind, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.Verb {
	case "get", "list", "watch":
	default:
		return authorizer.NoOpinion, "can only read resources of this type", nil
	}
	if attrs.Subresource != "" {
		return authorizer.NoOpinion, "cannot read subresource", nil
	}
	if attrs.Namespace == "" {
		return authorizer.NoOpinion, "can only read namespaced object of this type", nil
	}
	return a.authorizeRelated(node, k, attrs)
}

// authorizeGet allows get of one object related to the node.
func (a *Authorizer) authorizeGet(node string, k kind, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.Verb != "get" {
		return authorizer.NoOpinion, "can only get individual resources of this type", nil
	}
	if attrs.Subresource != "" {
		return authorizer.NoOpinion, "cannot get subresource", nil
	}
	return a.authorizeRelated(node, k, attrs)
}

// authorizeStatusUpdate allows update and patch of the status of an object related to the
// node.
func (a *Authorizer) authorizeStatusUpdate(node string, k kind, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.Verb != "update" && attrs.Verb != "patch" {
		return authorizer.NoOpinion, "can only get/update/patch this type", nil
	}
	if attrs.Subresource != "status" {
		return authorizer.NoOpinion, "can only update status subresource", nil
	}
	return a.authorizeRelated(node, k, attrs)
}

// authorizeCreateToken allows a token for the service account of a pod on the node.
func (a *Authorizer) authorizeCreateToken(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.Verb != "create" || attrs.Name == "" {
		return authorizer.NoOpinion, "can only create tokens for individual service accounts", nil
	}
	if attrs.Subresource != "token" {
		return authorizer.NoOpinion, "can only create token subresource of serviceaccount", nil
	}
	return a.authorizeRelated(node, serviceAccounts, attrs)
}

func (a *Authorizer) authorizeRelated(node string, k kind, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if attrs.Name == "" {
		return authorizer.NoOpinion, "No Object name found", nil
	}
	if !a.related(node, k, attrs.Namespace, attrs.Name) {
		return authorizer.NoOpinion, fmt.Sprintf("no relationship found between node '%s' and this object", node), nil
	}
	return authorizer.Allow, "", nil
}

// related reports whether the object is used by a pod bound to the node: a pod, a secret,
// config map, claim or service account a pod refers to, the volume bound to such a claim,
// or a secret such a volume refers to. Anything the graph cannot answer is unrelated.
func (a *Authorizer) related(node string, k kind, namespace, name string) bool {
	podsOnNode, err := a.graph.PodsOnNode(node)
	if err != nil {
		return false
	}
	if k == volumes {
		pv, err := a.graph.PersistentVolume(name)
		if err != nil || pv.Spec.ClaimRef == nil {
			return false
		}
		return slices.ContainsFunc(podsOnNode, func(p *corev1.Pod) bool {
			return p.Namespace == pv.Spec.ClaimRef.Namespace && !isMirrorPod(p) && slices.Contains(podClaimNames(p), pv.Spec.ClaimRef.Name)
		})
	}
	for _, p := range podsOnNode {
		if k == pods {
			if p.Namespace == namespace && p.Name == name {
				return true
			}
			continue
		}
		// A node can create mirror pods, so they grant nothing beyond themselves.
		if isMirrorPod(p) {
			continue
		}
		if k == secrets && a.secretViaVolume(p, namespace, name) {
			return true
		}
		if p.Namespace != namespace {
			continue
		}
		switch k {
		case secrets:
			if slices.Contains(podSecretNames(p), name) {
				return true
			}
		case configMaps:
			if slices.Contains(podConfigMapNames(p), name) {
				return true
			}
		case claims:
			if slices.Contains(podClaimNames(p), name) {
				return true
			}
		case serviceAccounts:
			if p.Spec.ServiceAccountName == name {
				return true
			}
		}
	}
	return false
}

// secretViaVolume reports whether a volume bound to one of the pod's claims refers to the
// secret namespace/name.
func (a *Authorizer) secretViaVolume(p *corev1.Pod, namespace, name string) bool {
	for _, claimName := range podClaimNames(p) {
		pvc, err := a.graph.PersistentVolumeClaim(p.Namespace, claimName)
		if err != nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv, err := a.graph.PersistentVolume(pvc.Spec.VolumeName)
		if err != nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != p.Namespace || pv.Spec.ClaimRef.Name != claimName {
			continue
		}
		if slices.Contains(pvSecretRefs(pv), secretRef{namespace, name}) {
			return true
		}
	}
	return false
}

// authorizeLease allows a node its own Lease in kube-node-lease. A create does not name
// the Lease in its URL; NodeRestriction admission checks the name in the body.
func authorizeLease(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return authorizer.NoOpinion, "can only get, create, update, patch, or delete a node lease", nil
	}
	if attrs.Namespace != NodeLeaseNamespace {
		return authorizer.NoOpinion, fmt.Sprintf("can only access leases in the %q system namespace", NodeLeaseNamespace), nil
	}
	if attrs.Verb != "create" && attrs.Name != node {
		return authorizer.NoOpinion, "can only access node lease with the same name as the requesting node", nil
	}
	return authorizer.Allow, "", nil
}

// authorizeNode allows a node to read its own Node and to write Nodes; NodeRestriction
// admission limits the writes to its own.
func authorizeNode(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case "create", "update", "patch":
			return authorizer.Allow, "", nil
		case "get", "list", "watch":
			// By name rather than by the graph, so a kubelet can look for its Node
			// before creating it.
			switch {
			case attrs.Name == node:
				return authorizer.Allow, "", nil
			case attrs.Name == "" && attrs.Verb != "get":
				// Kubernetes lets a node list only its own Node; a minik8s kubelet also
				// routes to every other node's pod CIDR (what a network plugin's DaemonSet
				// does there with its own account), so it lists and watches them all.
				return authorizer.Allow, "", nil
			case attrs.Name == "":
				return authorizer.NoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", node), nil
			default:
				return authorizer.NoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", node, attrs.Name), nil
			}
		}
	case "status":
		if attrs.Verb == "update" || attrs.Verb == "patch" {
			return authorizer.Allow, "", nil
		}
	}
	return authorizer.NoOpinion, "", nil
}

// authorizePod allows a node to read the pods bound to it (a list or watch only with a
// spec.nodeName=<node> field selector), and to create, delete, evict and update the status
// of pods, which NodeRestriction admission limits to its own.
func (a *Authorizer) authorizePod(node string, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	switch attrs.Subresource {
	case "":
		switch attrs.Verb {
		case "get":
			return a.authorizeGet(node, pods, attrs)
		case "list", "watch":
			for _, r := range attrs.FieldSelector {
				if r.Field == "spec.nodeName" && r.Operator == selection.Equals && r.Value == node {
					return authorizer.Allow, "", nil
				}
			}
			if attrs.Name != "" {
				return a.authorizeRelated(node, pods, attrs)
			}
			return authorizer.NoOpinion, "can only list/watch pods with spec.nodeName field selector", nil
		case "create", "delete":
			return authorizer.Allow, "", nil
		}
	case "status":
		if attrs.Verb == "update" || attrs.Verb == "patch" {
			return authorizer.Allow, "", nil
		}
	case "eviction":
		if attrs.Verb == "create" {
			return authorizer.Allow, "", nil
		}
	}
	return authorizer.NoOpinion, "", nil
}
