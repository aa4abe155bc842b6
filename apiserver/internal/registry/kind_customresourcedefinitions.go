package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/crdschema"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/apierror"
)

// CustomResourceDefinitions add resources to the API: each served version of a definition is
// served from the moment it is stored (see customresources.go), and a definition being
// deleted first deletes its objects.
var _ = register(Kind[*apiextensionsv1.CustomResourceDefinition]{
	Resource:         served("customresourcedefinitions"),
	PrepareForCreate: prepareDefinition,
	PrepareForUpdate: func(crd, _ *apiextensionsv1.CustomResourceDefinition) { acceptDefinition(crd) },
	Default:          crdschema.DefaultDefinition,
	Admit:            admitDefinition,
	Validation: validation.Rules[*apiextensionsv1.CustomResourceDefinition]{
		Create: func(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			return specErrors(crdschema.ValidateDefinition(crd, nil))
		},
		Update: func(crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
			return specErrors(crdschema.ValidateDefinition(crd, old))
		},
	},
	MarkDeleting: markDefinitionDeleting,
})

// specErrors drops what the common object metadata checks already report, so that each
// error is named once; the name's own rule (plural.group) stays.
func specErrors(errs field.ErrorList) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		if len(e.Field) > len("metadata.") && e.Field[:len("metadata.")] == "metadata." && e.Field != "metadata.name" {
			continue
		}
		out = append(out, e)
	}
	return out
}

// prepareDefinition starts a new definition's status: its names accepted and served at once,
// and the finalizer that deletes its objects before it goes.
func prepareDefinition(crd *apiextensionsv1.CustomResourceDefinition) {
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if !slices.Contains(crd.Finalizers, cleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, cleanupFinalizer)
	}
	acceptDefinition(crd)
}

// acceptDefinition keeps status in step with the spec: the accepted names, the versions
// objects were stored as, and the NamesAccepted and Established conditions.
func acceptDefinition(crd *apiextensionsv1.CustomResourceDefinition) {
	names := crd.Spec.Names
	if names.ListKind == "" && names.Kind != "" {
		names.ListKind = names.Kind + "List"
	}
	if names.Singular == "" {
		names.Singular = strings.ToLower(names.Kind)
	}
	crd.Status.AcceptedNames = names
	for _, v := range crd.Spec.Versions {
		if v.Storage && !slices.Contains(crd.Status.StoredVersions, v.Name) {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
		}
	}
	now := metav1.Now()
	setDefinitionCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted,
		Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found", LastTransitionTime: now})
	if crd.DeletionTimestamp == nil {
		setDefinitionCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted", LastTransitionTime: now})
	}
}

func markDefinitionDeleting(crd *apiextensionsv1.CustomResourceDefinition) {
	setDefinitionCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
		Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress", LastTransitionTime: metav1.Now()})
}

// setDefinitionCondition sets c, keeping the transition time of a condition whose status
// does not change.
func setDefinitionCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition) {
	for i, old := range crd.Status.Conditions {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		if !equality.Semantic.DeepEqual(old, c) {
			crd.Status.Conditions[i] = c
		}
		return
	}
	crd.Status.Conditions = append(crd.Status.Conditions, c)
}

// admitDefinition refuses names another definition of the group already serves, with the
// field paths of the clashing names.
func admitDefinition(ctx context.Context, r *Registry, crd *apiextensionsv1.CustomResourceDefinition) error {
	list, err := r.List(ctx, Key{Resource: served("customresourcedefinitions")}, ListOptions{})
	if err != nil {
		return err
	}
	names := field.NewPath("spec", "names")
	var errs field.ErrorList
	mine := crd.Spec.Names
	for _, item := range list.Items {
		other := item.(*apiextensionsv1.CustomResourceDefinition)
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group {
			continue
		}
		taken := other.Status.AcceptedNames
		inUse := func(s string) bool {
			return s != "" && (s == taken.Plural || s == taken.Singular || slices.Contains(taken.ShortNames, s))
		}
		if inUse(mine.Plural) {
			errs = append(errs, field.Invalid(names.Child("plural"), mine.Plural, fmt.Sprintf("%q is already in use by %s", mine.Plural, other.Name)))
		}
		if inUse(mine.Singular) {
			errs = append(errs, field.Invalid(names.Child("singular"), mine.Singular, fmt.Sprintf("%q is already in use by %s", mine.Singular, other.Name)))
		}
		for i, s := range mine.ShortNames {
			if inUse(s) {
				errs = append(errs, field.Invalid(names.Child("shortNames").Index(i), s, fmt.Sprintf("%q is already in use by %s", s, other.Name)))
			}
		}
		if mine.Kind != "" && (mine.Kind == taken.Kind || mine.Kind == taken.ListKind) {
			errs = append(errs, field.Invalid(names.Child("kind"), mine.Kind, fmt.Sprintf("%q is already in use by %s", mine.Kind, other.Name)))
		}
	}
	if len(errs) > 0 {
		return apierror.Invalid(apiextensionsv1.GroupName, "CustomResourceDefinition", crd.Name, errs)
	}
	return nil
}
