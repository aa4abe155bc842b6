package validation

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rules is how objects of one kind T are validated. Each served kind has its Rules here (Pod,
// Service, ...), which the kind's registration in the registry names; a kind whose checks are
// few can write its Rules where it registers.
type Rules[T runtime.Object] struct {
	// Name checks metadata.name; nil means a DNS subdomain, as for most kinds.
	Name apivalidation.ValidateNameFunc
	// Spec checks everything but the object's metadata; nil when there is nothing to check.
	Spec func(obj T) field.ErrorList
	// Update checks what may not change; nil when anything may.
	Update func(newObj, oldObj T) field.ErrorList
	// Create checks, besides the rest, what only an object being created must satisfy; nil
	// when nothing more.
	Create func(obj T) field.ErrorList
}

// ValidateCreate checks an object about to be created, of a kind that is namespaced or not.
// It expects defaults to have been applied and metadata.name and metadata.namespace (for
// namespaced kinds) to be filled in.
func (r Rules[T]) ValidateCreate(obj T, namespaced bool) field.ErrorList {
	name := r.Name
	if name == nil {
		name = dnsSubdomain
	}
	allErrs := apivalidation.ValidateObjectMeta(objectMeta(obj), namespaced, name, field.NewPath("metadata"))
	return append(allErrs, r.spec(obj)...)
}

// ValidateUpdate checks newObj replacing oldObj: the new object must be valid on its own, and
// what Kubernetes keeps immutable must not change. An empty metadata.resourceVersion is not
// an error here: the apiserver decides whether an unconditional update is allowed.
func (r Rules[T]) ValidateUpdate(newObj, oldObj T) field.ErrorList {
	var allErrs field.ErrorList
	for _, e := range apivalidation.ValidateObjectMetaUpdate(objectMeta(newObj), objectMeta(oldObj), field.NewPath("metadata")) {
		if e.Field != "metadata.resourceVersion" {
			allErrs = append(allErrs, e)
		}
	}
	allErrs = append(allErrs, r.spec(newObj)...)
	if r.Update != nil {
		allErrs = append(allErrs, r.Update(newObj, oldObj)...)
	}
	return allErrs
}

// ValidateNew checks what only an object being created must satisfy, besides ValidateCreate
// (which updates run too).
func (r Rules[T]) ValidateNew(obj T) field.ErrorList {
	if r.Create == nil {
		return nil
	}
	return r.Create(obj)
}

func (r Rules[T]) spec(obj T) field.ErrorList {
	if r.Spec == nil {
		return nil
	}
	return r.Spec(obj)
}

// objectMeta is the metadata of obj; every served kind embeds ObjectMeta.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	return obj.(metav1.ObjectMetaAccessor).GetObjectMeta().(*metav1.ObjectMeta)
}

var (
	dnsSubdomain = apivalidation.NameIsDNSSubdomain
	dnsLabel     = apivalidation.NameIsDNSLabel
	dns1035Label = apivalidation.NameIsDNS1035Label
	pathSegment  = path.ValidatePathSegmentName
)
