package validation

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/scheme"
)

// ValidateCreate checks an object about to be created. It expects defaults to have been
// applied and metadata.name and metadata.namespace (for namespaced kinds) to be filled in.
func ValidateCreate(obj runtime.Object) field.ErrorList {
	k, err := lookup(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	allErrs := apivalidation.ValidateObjectMeta(k.meta(obj), k.namespaced, k.name, field.NewPath("metadata"))
	return append(allErrs, k.spec(obj)...)
}

// ValidateUpdate checks newObj replacing oldObj: the new object must be valid on its own, and
// what Kubernetes keeps immutable must not change. An empty metadata.resourceVersion is not
// an error here: the apiserver decides whether an unconditional update is allowed.
func ValidateUpdate(newObj, oldObj runtime.Object) field.ErrorList {
	k, err := lookup(newObj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if fmt.Sprintf("%T", newObj) != fmt.Sprintf("%T", oldObj) {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("update of %T with %T", oldObj, newObj))}
	}
	var allErrs field.ErrorList
	for _, e := range apivalidation.ValidateObjectMetaUpdate(k.meta(newObj), k.meta(oldObj), field.NewPath("metadata")) {
		if e.Field != "metadata.resourceVersion" {
			allErrs = append(allErrs, e)
		}
	}
	allErrs = append(allErrs, k.spec(newObj)...)
	if k.update != nil {
		allErrs = append(allErrs, k.update(newObj, oldObj)...)
	}
	return allErrs
}

// kind holds how one served kind is validated.
type kind struct {
	namespaced bool
	name       apivalidation.ValidateNameFunc
	// spec checks everything but the object's metadata name and namespace.
	spec func(obj runtime.Object) field.ErrorList
	// update checks what may not change; nil when anything may.
	update func(newObj, oldObj runtime.Object) field.ErrorList
}

func (k kind) meta(obj runtime.Object) *metav1.ObjectMeta {
	// Every served kind embeds ObjectMeta; lookup has already matched the type.
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

var (
	dnsSubdomain = apivalidation.NameIsDNSSubdomain
	dnsLabel     = apivalidation.NameIsDNSLabel
	dns1035Label = apivalidation.NameIsDNS1035Label
	pathSegment  = path.ValidatePathSegmentName
)

// lookup finds the rules for obj and whether its kind is namespaced, from scheme.Resources.
func lookup(obj runtime.Object) (kind, error) {
	if obj == nil {
		return kind{}, fmt.Errorf("nil object")
	}
	k, ok := rules(obj)
	if !ok {
		return kind{}, fmt.Errorf("no validation for %T", obj)
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return kind{}, fmt.Errorf("kind of %T: %w", obj, err)
	}
	for _, gvk := range gvks {
		if r, ok := scheme.ByGVK(gvk); ok {
			k.namespaced = r.Namespaced
			return k, nil
		}
	}
	return kind{}, fmt.Errorf("%T is not a served kind", obj)
}

// rules returns the validation of obj's kind. Each case adapts the typed functions to the
// untyped signature; ValidateUpdate has checked that old and new have the same type.
func rules(obj runtime.Object) (kind, bool) {
	switch obj.(type) {
	case *corev1.Pod:
		return typed(dnsSubdomain, validatePod, validatePodUpdate), true
	case *corev1.Service:
		return typed(dns1035Label, validateService, validateServiceUpdate), true
	case *corev1.Endpoints:
		return typed(dnsSubdomain, validateEndpoints, nil), true
	case *discoveryv1.EndpointSlice:
		return typed(dnsSubdomain, validateEndpointSlice, nil), true
	case *corev1.Namespace:
		return typed(dnsLabel, validateNamespace, nil), true
	case *corev1.Node:
		return typed(dnsSubdomain, validateNode, validateNodeUpdate), true
	case *corev1.Event:
		return typed(dnsSubdomain, validateEvent, nil), true
	case *corev1.ConfigMap:
		return typed(dnsSubdomain, validateConfigMap, validateConfigMapUpdate), true
	case *corev1.Secret:
		return typed(dnsSubdomain, validateSecret, validateSecretUpdate), true
	case *corev1.ServiceAccount:
		return typed(dnsSubdomain, validateServiceAccount, nil), true
	case *corev1.PersistentVolume:
		return typed(dnsSubdomain, validatePersistentVolume, validatePersistentVolumeUpdate), true
	case *corev1.PersistentVolumeClaim:
		return typed(dnsSubdomain, validatePersistentVolumeClaim, validatePersistentVolumeClaimUpdate), true
	case *storagev1.StorageClass:
		return typed(dnsSubdomain, validateStorageClass, validateStorageClassUpdate), true
	case *appsv1.Deployment:
		return typed(dnsSubdomain, validateDeployment, validateDeploymentUpdate), true
	case *appsv1.ReplicaSet:
		return typed(dnsSubdomain, validateReplicaSet, validateReplicaSetUpdate), true
	case *batchv1.Job:
		return typed(dnsSubdomain, validateJob, validateJobUpdate), true
	case *autoscalingv2.HorizontalPodAutoscaler:
		return typed(pathSegment, validateHPA, nil), true
	case *networkingv1.Ingress:
		return typed(dnsSubdomain, validateIngress, nil), true
	case *coordinationv1.Lease:
		return typed(dnsSubdomain, validateLease, nil), true
	case *serverlessv1.Function:
		return typed(dnsLabel, validateFunction, nil), true
	case *serverlessv1.Workflow:
		return typed(dnsSubdomain, validateWorkflow, nil), true
	case *serverlessv1.WorkflowExecution:
		return typed(dnsSubdomain, validateWorkflowExecution, validateWorkflowExecutionUpdate), true
	}
	return kind{}, false
}

func typed[T runtime.Object](name apivalidation.ValidateNameFunc, spec func(T) field.ErrorList, update func(T, T) field.ErrorList) kind {
	k := kind{name: name, spec: func(o runtime.Object) field.ErrorList { return spec(o.(T)) }}
	if update != nil {
		k.update = func(n, o runtime.Object) field.ErrorList { return update(n.(T), o.(T)) }
	}
	return k
}
