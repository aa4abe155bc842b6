package crdschema

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// Validate checks obj against the version on create (old == nil) or update:
// apiVersion and kind, ObjectMeta, the OpenAPI schema (with upstream's
// ratcheting on update: errors already present in old are not reported),
// embedded resources, list-type invariants, the scale replica paths and the
// x-kubernetes-validations CEL rules. It follows kube-apiserver's
// customresource strategy, so field paths and messages match.
func (v *Version) Validate(obj, old *unstructured.Unstructured) field.ErrorList {
	ctx := context.TODO()
	if errs := v.validateTypeMeta(obj); len(errs) > 0 {
		return errs
	}

	var errs field.ErrorList
	var schemaOpts []apiservervalidation.ValidationOption
	var celOpts []cel.Option
	if old == nil {
		errs = append(errs, v.validateObjectMeta(obj, nil)...)
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj.Object, v.validator)...)
	} else {
		if ratcheting() {
			co := common.NewCorrelatedObject(obj.Object, old.Object, &model.Structural{Structural: v.structural})
			schemaOpts = append(schemaOpts, apiservervalidation.WithRatcheting(co))
			celOpts = append(celOpts, cel.WithRatcheting(co))
		}
		errs = append(errs, v.validateObjectMeta(obj, old)...)
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj.Object, old.Object, v.validator, schemaOpts...)...)
	}
	errs = append(errs, v.validateScaleSpec(obj)...)
	errs = append(errs, v.validateScaleStatus(obj)...)

	// Embedded resources are checked the same way on create and update.
	if v.embedded {
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj.Object, v.structural, false)...)
	}

	// A list-type violation already in old does not block an update.
	if old == nil || len(v.validateListTypes(old)) == 0 {
		errs = append(errs, v.validateListTypes(obj)...)
	}

	errs = append(errs, v.validateCEL(ctx, errs, obj, old, celOpts)...)
	return errs
}

// ValidateStatus checks a write of the status subresource, as upstream's
// status strategy does: apiVersion and kind, the ObjectMeta update, status
// against the schema's status property (paths start at "status"), the status
// replica paths of the scale subresource, list-type invariants and the CEL
// rules of the whole object. The caller keeps only obj's status (and
// old's everything else) before calling, as upstream's PrepareForUpdate does.
func (v *Version) ValidateStatus(obj, old *unstructured.Unstructured) field.ErrorList {
	ctx := context.TODO()
	if errs := v.validateTypeMeta(obj); len(errs) > 0 {
		return errs
	}

	var errs field.ErrorList
	var schemaOpts []apiservervalidation.ValidationOption
	var celOpts []cel.Option
	var oldStatus any
	if old != nil {
		oldStatus = old.Object["status"]
		if ratcheting() {
			co := common.NewCorrelatedObject(obj.Object, old.Object, &model.Structural{Structural: v.structural})
			if v.structural != nil {
				schemaOpts = append(schemaOpts, apiservervalidation.WithRatcheting(co.Key("status")))
			}
			celOpts = append(celOpts, cel.WithRatcheting(co))
		}
	}
	errs = append(errs, v.validateObjectMeta(obj, old)...)
	if status, ok := obj.Object["status"]; ok {
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, oldStatus, v.statusValidator, schemaOpts...)...)
	}
	errs = append(errs, v.validateScaleStatus(obj)...)

	if newErrs := v.validateListTypes(obj); len(newErrs) > 0 {
		if old == nil || len(v.validateListTypes(old)) == 0 {
			errs = append(errs, newErrs...)
		}
	}

	errs = append(errs, v.validateCEL(ctx, errs, obj, old, celOpts)...)
	return errs
}

// validateListTypes checks obj's set and map lists; nothing when the schema has none.
func (v *Version) validateListTypes(obj *unstructured.Unstructured) field.ErrorList {
	if !v.listTypes {
		return nil
	}
	return structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj.Object)
}

func ratcheting() bool {
	return utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CRDValidationRatcheting)
}

// validateCEL runs the x-kubernetes-validations rules unless errs already
// hold an error that makes the object unfit for them (wrong types, missing
// required fields, values over their limits), which upstream reports instead.
func (v *Version) validateCEL(ctx context.Context, errs field.ErrorList, obj, old *unstructured.Unstructured, opts []cel.Option) field.ErrorList {
	if v.cel == nil {
		return nil
	}
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.ErrorList{field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")}
		}
	}
	var oldObj any
	if old != nil {
		oldObj = old.Object
	}
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj.Object, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return celErrs
}

func (v *Version) validateTypeMeta(obj *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	if k := obj.GetKind(); k != v.kind.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), k, fmt.Sprintf("must be %v", v.kind.Kind)))
	}
	want := v.kind.Group + "/" + v.kind.Version
	if av := obj.GetAPIVersion(); av != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), av, fmt.Sprintf("must be %v", want)))
	}
	return errs
}

// validateObjectMeta validates metadata on create (old == nil: the name must
// be a DNS subdomain) or update (immutable fields).
func (v *Version) validateObjectMeta(obj, old *unstructured.Unstructured) field.ErrorList {
	meta, errs := objectMeta(obj)
	if len(errs) > 0 {
		return errs
	}
	// ObjectMeta's declarative rules are all alpha, which Kubernetes does not enforce: the
	// handwritten validation is the whole of it.
	if old == nil {
		return metavalidation.ValidateObjectMeta(meta, v.namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	}
	oldMeta, errs := objectMeta(old)
	if len(errs) > 0 {
		return errs
	}
	return metavalidation.ValidateObjectMetaUpdate(meta, oldMeta, field.NewPath("metadata"))
}

func objectMeta(obj *unstructured.Unstructured) (*metav1.ObjectMeta, field.ErrorList) {
	meta := &metav1.ObjectMeta{}
	raw := obj.Object["metadata"]
	if raw == nil {
		return meta, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
	}
	if wellFormedMetadata(m) {
		// The common case, without the converter's reflection.
		fillObjectMeta(m, meta)
		return meta, nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
	}
	return meta, nil
}

func (v *Version) validateScaleSpec(obj *unstructured.Unstructured) field.ErrorList {
	if v.scale == nil {
		return nil
	}
	return validateReplicas(obj, v.scale.SpecReplicasPath)
}

func (v *Version) validateScaleStatus(obj *unstructured.Unstructured) field.ErrorList {
	if v.scale == nil {
		return nil
	}
	errs := validateReplicas(obj, v.scale.StatusReplicasPath)
	if p := v.scale.LabelSelectorPath; p != nil {
		sel, _, err := unstructured.NestedString(obj.Object, splitPath(*p)...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*p), sel, err.Error()))
		}
	}
	return errs
}

// validateReplicas checks the integer at a scale replicas path; upstream
// names the error after the path as written in the CRD.
func validateReplicas(obj *unstructured.Unstructured, path string) field.ErrorList {
	n, _, err := unstructured.NestedInt64(obj.Object, splitPath(path)...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, err.Error())}
	case n < 0:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, "should be a non-negative integer")}
	case n > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(path), n, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// splitPath turns a scale path such as ".spec.replicas" into its fields.
func splitPath(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

// fillObjectMeta copies metadata that wellFormedMetadata accepted into meta.
func fillObjectMeta(m map[string]any, meta *metav1.ObjectMeta) {
	str := func(k string) string { s, _ := m[k].(string); return s }
	strMap := func(k string) map[string]string {
		mm, ok := m[k].(map[string]any)
		if !ok {
			return nil
		}
		out := make(map[string]string, len(mm))
		for key, v := range mm {
			out[key], _ = v.(string)
		}
		return out
	}
	timeOf := func(k string) *metav1.Time {
		s, ok := m[k].(string)
		if !ok {
			return nil
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil
		}
		mt := metav1.NewTime(t)
		return &mt
	}
	meta.Name, meta.GenerateName, meta.Namespace = str("name"), str("generateName"), str("namespace")
	meta.SelfLink, meta.UID, meta.ResourceVersion = str("selfLink"), types.UID(str("uid")), str("resourceVersion")
	meta.Generation, _ = m["generation"].(int64)
	if g, ok := m["deletionGracePeriodSeconds"].(int64); ok {
		meta.DeletionGracePeriodSeconds = &g
	}
	if t := timeOf("creationTimestamp"); t != nil {
		meta.CreationTimestamp = *t
	}
	meta.DeletionTimestamp = timeOf("deletionTimestamp")
	meta.Labels, meta.Annotations = strMap("labels"), strMap("annotations")
	if l, ok := m["finalizers"].([]any); ok {
		meta.Finalizers = make([]string, 0, len(l))
		for _, f := range l {
			s, _ := f.(string)
			meta.Finalizers = append(meta.Finalizers, s)
		}
	}
}
