package noderestriction

import (
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/shared/apierror"
)

// Request is the write admission decides on.
type Request struct {
	User      authorizer.User
	Operation admissionv1.Operation
	// Resource is the group and plural resource written, e.g. {"", "pods"}.
	Resource    schema.GroupResource
	Subresource string
	Namespace   string
	// Name is the object's name, also on a create (where it comes from the object).
	Name string
	// Object is the object written (for an update, after the update); OldObject is the
	// stored object an update replaces.
	Object    runtime.Object
	OldObject runtime.Object
}

// PodGetter finds a stored pod; a missing pod's error matches apierror.ErrNotFound.
type PodGetter func(namespace, name string) (*corev1.Pod, error)

var (
	podResource     = schema.GroupResource{Resource: "pods"}
	nodeResource    = schema.GroupResource{Resource: "nodes"}
	pvcResource     = schema.GroupResource{Resource: "persistentvolumeclaims"}
	svcacctResource = schema.GroupResource{Resource: "serviceaccounts"}
	leaseResource   = schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"}
)

// Admit returns nil when the request may go on, a 403 naming what a node may not do, or
// the pod lookup's NotFound. Only nodes' creates, updates and deletes are restricted.
func Admit(req Request, getPod PodGetter) error {
	switch req.Operation {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete:
	default:
		return nil
	}
	node, isNode := authorizer.NodeIdentity(req.User)
	if !isNode {
		return nil
	}
	if node == "" {
		return forbidden(req, fmt.Errorf("could not determine node from user %q", req.User.Name))
	}
	var err error
	switch req.Resource {
	case podResource:
		switch req.Subresource {
		case "":
			err = admitPod(node, req, getPod)
		case "status":
			err = admitPodStatus(node, req)
		case "eviction":
			err = admitPodEviction(node, req, getPod)
		default:
			err = fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", req.Subresource)
		}
	case nodeResource:
		err = admitNode(node, req)
	case pvcResource:
		if req.Subresource != "status" {
			err = errors.New("may only update PVC status")
		} else {
			err = admitPVCStatus(node, req)
		}
	case svcacctResource:
		err = admitServiceAccount(node, req, getPod)
	case leaseResource:
		err = admitLease(node, req)
	}
	if err == nil || errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrForbidden) {
		return err
	}
	return forbidden(req, err)
}

// forbidden is admission's 403 about the request's object: named by the request, else by
// the object's name or generateName, else "Unknown".
func forbidden(req Request, err error) error {
	name := req.Name
	if name == "" {
		name = "Unknown"
		if req.Object != nil {
			if m, merr := meta.Accessor(req.Object); merr != nil {
				name = "Unknown/errorGettingName"
			} else if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return authorizer.NewForbidden(req.Resource, name, err)
}

// admitPod refuses every pod a node creates: Kubernetes lets a node create only mirror
// pods of its static pods, and minik8s has no static pods. A node deletes only its pods.
func admitPod(node string, req Request, getPod PodGetter) error {
	switch req.Operation {
	case admissionv1.Create:
		pod, ok := req.Object.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("unexpected type %T", req.Object)
		}
		if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; !mirror {
			return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", corev1.MirrorPodAnnotationKey, node)
		}
		return fmt.Errorf("node %q can not create mirror pods: this cluster has no static pods", node)
	case admissionv1.Delete:
		pod, err := getPod(req.Namespace, req.Name)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != node {
			return fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node)
		}
		return nil
	default:
		return fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", req.Operation, node)
	}
}

// admitPodStatus lets a node update the status of its own pods, without their labels or
// resource claim statuses.
func admitPodStatus(node string, req Request) error {
	if req.Operation != admissionv1.Update {
		return fmt.Errorf("unexpected operation %q", req.Operation)
	}
	oldPod, ok := req.OldObject.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("unexpected type %T", req.OldObject)
	}
	if oldPod.Spec.NodeName != node {
		return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
	}
	newPod, ok := req.Object.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("unexpected type %T", req.Object)
	}
	if !labels.Equals(oldPod.Labels, newPod.Labels) {
		return fmt.Errorf("node %q cannot update labels through pod status", node)
	}
	if !equality.Semantic.DeepEqual(claimStatusNames(oldPod), claimStatusNames(newPod)) {
		return fmt.Errorf("node %q cannot update resource claim statues", node)
	}
	return nil
}

// claimStatusNames is what of a pod's resource claim statuses a node may not change.
func claimStatusNames(pod *corev1.Pod) []corev1.PodResourceClaimStatus {
	out := make([]corev1.PodResourceClaimStatus, len(pod.Status.ResourceClaimStatuses))
	for i, s := range pod.Status.ResourceClaimStatuses {
		out[i] = corev1.PodResourceClaimStatus{Name: s.Name, ResourceClaimName: s.ResourceClaimName}
	}
	return out
}

// admitPodEviction lets a node evict only its own pods.
func admitPodEviction(node string, req Request, getPod PodGetter) error {
	if req.Operation != admissionv1.Create {
		return fmt.Errorf("unexpected operation %s", req.Operation)
	}
	eviction, ok := req.Object.(*policyv1.Eviction)
	if !ok {
		return fmt.Errorf("unexpected type %T", req.Object)
	}
	// The pod named by the URL, not the one the body may name.
	podName := req.Name
	if podName == "" {
		if eviction.Name == "" {
			return errors.New("could not determine pod from request data")
		}
		podName = eviction.Name
	}
	pod, err := getPod(req.Namespace, podName)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName != node {
		return fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node)
	}
	return nil
}

// admitPVCStatus lets a node change only a claim's status.capacity and status.conditions
// (and the resize bookkeeping a kubelet keeps in its status).
func admitPVCStatus(node string, req Request) error {
	if req.Operation != admissionv1.Update {
		return fmt.Errorf("unexpected operation %q", req.Operation)
	}
	oldPVC, ok := req.OldObject.(*corev1.PersistentVolumeClaim)
	if !ok {
		return fmt.Errorf("unexpected type %T", req.OldObject)
	}
	newPVC, ok := req.Object.(*corev1.PersistentVolumeClaim)
	if !ok {
		return fmt.Errorf("unexpected type %T", req.Object)
	}
	oldPVC, newPVC = oldPVC.DeepCopy(), newPVC.DeepCopy()
	for _, c := range []*corev1.PersistentVolumeClaim{oldPVC, newPVC} {
		// An update may leave the resourceVersion out to be unconditional.
		c.ResourceVersion = ""
		c.ManagedFields = nil
		c.Status.Capacity = nil
		c.Status.Conditions = nil
		c.Status.AllocatedResources = nil
		c.Status.AllocatedResourceStatuses = nil
	}
	if !equality.Semantic.DeepEqual(oldPVC, newPVC) {
		return fmt.Errorf("node %q is not allowed to update fields other than status.capacity and status.conditions: %v", node, cmp.Diff(oldPVC, newPVC))
	}
	return nil
}

// admitNode lets a node write only its own Node, and keeps it from choosing its taints,
// config source or labels the cluster reserves, which would steer workloads to it.
func admitNode(node string, req Request) error {
	if req.Name != node {
		return fmt.Errorf("node %q is not allowed to modify node %q", node, req.Name)
	}
	switch req.Operation {
	case admissionv1.Create:
		n, ok := req.Object.(*corev1.Node)
		if !ok {
			return fmt.Errorf("unexpected type %T", req.Object)
		}
		if n.Spec.ConfigSource != nil {
			return fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", node)
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, nil)); len(bad) > 0 {
			return fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
	case admissionv1.Update:
		n, ok := req.Object.(*corev1.Node)
		if !ok {
			return fmt.Errorf("unexpected type %T", req.Object)
		}
		old, ok := req.OldObject.(*corev1.Node)
		if !ok {
			return fmt.Errorf("unexpected type %T", req.Object)
		}
		// Only a new non-nil config source counts: an old kubelet may drop the field.
		if n.Spec.ConfigSource != nil && !equality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", node)
		}
		if !equality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return fmt.Errorf("node %q is not allowed to modify taints", node)
		}
		if bad := forbiddenLabels(modifiedLabels(n.Labels, old.Labels)); len(bad) > 0 {
			return fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", "))
		}
	}
	return nil
}

// admitServiceAccount lets a node ask a token only bound to a pod of its own, by uid.
func admitServiceAccount(node string, req Request, getPod PodGetter) error {
	if req.Operation != admissionv1.Create || req.Subresource != "token" {
		return nil
	}
	tr, ok := req.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return fmt.Errorf("unexpected type %T", req.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return errors.New("node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return errors.New("node requested token with a pod binding without a uid")
	}
	pod, err := getPod(req.Namespace, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != node {
		return errors.New("node requested token bound to a pod scheduled on a different node")
	}
	return nil
}

// admitLease lets a node write only the Lease named after it in kube-node-lease.
func admitLease(node string, req Request) error {
	if req.Namespace != corev1.NamespaceNodeLease {
		return fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	name := req.Name
	if req.Operation == admissionv1.Create {
		lease, ok := req.Object.(*coordinationv1.Lease)
		if !ok {
			return fmt.Errorf("unexpected type %T", req.Object)
		}
		name = lease.Name
	}
	if name != node {
		return errors.New("can only access node lease with the same name as the requesting node")
	}
	return nil
}
