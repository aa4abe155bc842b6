package registry

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/allocator"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// strategies builds the strategy of every served resource.
func strategies(alloc *allocator.Allocator) map[*scheme.Resource]Strategy {
	out := make(map[*scheme.Resource]Strategy, len(scheme.Resources))
	for _, r := range scheme.Resources {
		g := generic{res: r}
		var st Strategy = g
		switch r.GVK.GroupKind() {
		case corev1.SchemeGroupVersion.WithKind("Pod").GroupKind():
			st = podStrategy{g}
		case corev1.SchemeGroupVersion.WithKind("Service").GroupKind():
			st = allocating{g, alloc}
		case corev1.SchemeGroupVersion.WithKind("Node").GroupKind():
			st = nodeStrategy{allocating{g, alloc}}
		case corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind():
			st = namespaceStrategy{g}
		case corev1.SchemeGroupVersion.WithKind("Secret").GroupKind():
			st = secretStrategy{g}
		case corev1.SchemeGroupVersion.WithKind("Event").GroupKind():
			st = eventStrategy{g}
		case batchv1.SchemeGroupVersion.WithKind("Job").GroupKind():
			st = jobStrategy{g}
		case corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim").GroupKind():
			st = phaseFields{g}
		}
		out[r] = st
	}
	return out
}

// podStrategy: pods start Pending, are deleted gracefully once a node runs them, and are
// selectable by node, phase and more.
type podStrategy struct{ generic }

func (podStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*corev1.Pod).Status = corev1.PodStatus{Phase: corev1.PodPending}
}

// Default also runs the pod as its namespace's default service account unless it names one,
// as Kubernetes' ServiceAccount admission does; both spellings of the field are kept in step.
func (g podStrategy) Default(obj runtime.Object) {
	g.generic.Default(obj)
	spec := &obj.(*corev1.Pod).Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
}

func (podStrategy) GracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod := obj.(*corev1.Pod)
	// A pod no kubelet runs, or that has finished, has nothing to stop.
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts != nil && opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

func (g podStrategy) Fields(obj runtime.Object) fields.Set {
	s := g.generic.Fields(obj)
	o := obj.(*corev1.Pod)
	s["spec.nodeName"] = o.Spec.NodeName
	s["spec.restartPolicy"] = string(o.Spec.RestartPolicy)
	s["spec.schedulerName"] = o.Spec.SchedulerName
	s["spec.serviceAccountName"] = o.Spec.ServiceAccountName
	s["status.phase"] = string(o.Status.Phase)
	s["status.podIP"] = o.Status.PodIP
	s["status.nominatedNodeName"] = o.Status.NominatedNodeName
	return s
}

// allocating kinds get addresses from the allocator: Services cluster IPs and node ports.
type allocating struct {
	generic
	alloc *allocator.Allocator
}

func (a allocating) Allocate(ctx context.Context, old, obj runtime.Object) (func(), error) {
	return a.alloc.Allocate(ctx, old, obj)
}

func (a allocating) Release(ctx context.Context, old, obj runtime.Object) {
	a.alloc.Release(ctx, old, obj)
}

// nodeStrategy: the kubelet registers its Node with capacity and conditions, so they stay;
// each Node gets a pod CIDR.
type nodeStrategy struct{ allocating }

func (nodeStrategy) PrepareForCreate(runtime.Object) {}

func (g nodeStrategy) Fields(obj runtime.Object) fields.Set {
	s := g.generic.Fields(obj)
	s["spec.unschedulable"] = fmt.Sprint(obj.(*corev1.Node).Spec.Unschedulable)
	return s
}

// ProtectedNamespaces may not be deleted, as in Kubernetes.
var ProtectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// namespaceStrategy: namespaces start Active, turn Terminating when deleted and go once their
// content is gone (spec.finalizers holds them until then).
type namespaceStrategy struct{ generic }

func (namespaceStrategy) PrepareForCreate(obj runtime.Object) {
	obj.(*corev1.Namespace).Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
}

func (namespaceStrategy) CheckDelete(name string) error {
	if ProtectedNamespaces[name] {
		return apierror.New(apierror.ErrForbidden, "namespaces %q is forbidden: this namespace may not be deleted", name)
	}
	return nil
}

func (namespaceStrategy) Finalizing(obj runtime.Object) bool {
	return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0
}

func (namespaceStrategy) MarkDeleting(obj runtime.Object) {
	obj.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating
}

func (g namespaceStrategy) Fields(obj runtime.Object) fields.Set {
	s := g.generic.Fields(obj)
	s["status.phase"] = string(obj.(*corev1.Namespace).Status.Phase)
	return s
}

// secretStrategy: stringData is write-only, merged into data (stringData wins) and never
// stored, as Kubernetes does on decode.
type secretStrategy struct{ generic }

func (secretStrategy) Canonicalize(obj runtime.Object) {
	sec := obj.(*corev1.Secret)
	if len(sec.StringData) == 0 {
		return
	}
	if sec.Data == nil {
		sec.Data = make(map[string][]byte, len(sec.StringData))
	}
	for k, v := range sec.StringData {
		sec.Data[k] = []byte(v)
	}
	sec.StringData = nil
}

func (g secretStrategy) Fields(obj runtime.Object) fields.Set {
	s := g.generic.Fields(obj)
	s["type"] = string(obj.(*corev1.Secret).Type)
	return s
}

// eventStrategy: events are selectable by what they are about.
type eventStrategy struct{ generic }

func (g eventStrategy) Fields(obj runtime.Object) fields.Set {
	s := g.generic.Fields(obj)
	o := obj.(*corev1.Event)
	s["involvedObject.kind"] = o.InvolvedObject.Kind
	s["involvedObject.namespace"] = o.InvolvedObject.Namespace
	s["involvedObject.name"] = o.InvolvedObject.Name
	s["involvedObject.uid"] = string(o.InvolvedObject.UID)
	s["involvedObject.apiVersion"] = o.InvolvedObject.APIVersion
	s["involvedObject.resourceVersion"] = o.InvolvedObject.ResourceVersion
	s["involvedObject.fieldPath"] = o.InvolvedObject.FieldPath
	s["reason"] = o.Reason
	s["reportingComponent"] = o.ReportingController
	s["source"] = o.Source.Component
	s["type"] = o.Type
	return s
}

// phaseFields kinds are selectable by status.phase.
type phaseFields struct{ generic }

func (g phaseFields) Fields(obj runtime.Object) fields.Set {
	s := g.generic.Fields(obj)
	s["status.phase"] = string(obj.(*corev1.PersistentVolumeClaim).Status.Phase)
	return s
}

// jobStrategy: batch/v1 Jobs orphan their pods unless the delete says otherwise, as Kubernetes
// keeps for compatibility (kubectl asks for Background).
type jobStrategy struct{ generic }

func (jobStrategy) GCPolicy() GCPolicy { return OrphanDependents }
