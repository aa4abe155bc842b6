package crdschema

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// scheme converts between apiextensions.k8s.io/v1 and the internal types the
// upstream validation is written against.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// DefaultDefinition applies the apiextensions.k8s.io/v1 defaults to crd
// (conversion strategy None, list kind, singular name, served/storage
// defaults of nested structs), as kube-apiserver does when it decodes one.
func DefaultDefinition(crd *apiextensionsv1.CustomResourceDefinition) {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
}

// PrepareDefinition does what kube-apiserver's CRD strategy does before
// validation: on create (old == nil) it clears status and sets generation 1;
// on update it keeps old's status and bumps generation when spec changed. In
// both cases the storage version is recorded in status.storedVersions.
func PrepareDefinition(crd, old *apiextensionsv1.CustomResourceDefinition) {
	if old == nil {
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
		crd.Generation = 1
	} else {
		crd.Status = *old.Status.DeepCopy()
		crd.Generation = old.Generation
		if !apiequality.Semantic.DeepEqual(old.Spec, crd.Spec) {
			crd.Generation = old.Generation + 1
		}
	}
	addStoredVersion(crd)
}

// addStoredVersion appends the storage version to status.storedVersions when
// it is missing, which is how upstream keeps the list of versions that may
// still have objects in storage.
func addStoredVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if !v.Storage {
			continue
		}
		for _, s := range crd.Status.StoredVersions {
			if s == v.Name {
				return
			}
		}
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		return
	}
}

// ValidateDefinition validates crd on create (old == nil) or update with
// kube-apiserver's rules, field paths and messages. crd should already carry
// DefaultDefinition's defaults, as it would upstream after decoding. The
// storage version is treated as recorded in status.storedVersions (as
// PrepareDefinition does) so that callers may prepare after validating.
func ValidateDefinition(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	c := crd.DeepCopy()
	addStoredVersion(c)
	in, err := toInternal(c)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	ctx := context.TODO()
	if old == nil {
		return validation.ValidateCustomResourceDefinition(ctx, in)
	}
	oldIn, err := toInternal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateCustomResourceDefinitionUpdate(ctx, in, oldIn)
}

// ValidateDefinitionStatus validates a write of the CRD status subresource.
func ValidateDefinitionStatus(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	in, err := toInternal(crd)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	oldIn, err := toInternal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateUpdateCustomResourceDefinitionStatus(context.TODO(), in, oldIn)
}

func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := scheme.Convert(crd, out, nil); err != nil {
		return nil, fmt.Errorf("convert CustomResourceDefinition %s to internal: %w", crd.Name, err)
	}
	return out, nil
}
