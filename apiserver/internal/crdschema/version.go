package crdschema

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// Version is what serving one version of a CRD needs. It is built once per
// CRD change and is safe for concurrent use.
type Version struct {
	kind                  schema.GroupVersionKind
	namespaced            bool
	preserveUnknownFields bool

	// structural is nil when the version has no schema.
	structural *structuralschema.Structural
	// defaults is structural reduced to the schemas that hold a default or have one below
	// them, which is all defaulting visits; nil when there are none.
	defaults        *structuralschema.Structural
	validator       apiservervalidation.SchemaValidator
	statusValidator apiservervalidation.SchemaValidator
	// cel is nil when the schema has no x-kubernetes-validations.
	cel *cel.Validator

	// embedded and listTypes say whether the schema has any x-kubernetes-embedded-resource
	// or set/map x-kubernetes-list-type: without, the walks that look for them are skipped.
	embedded, listTypes bool

	hasStatus bool
	scale     *apiextensions.CustomResourceSubresourceScale

	columns    []metav1.TableColumnDefinition
	cellPaths  []*jsonpath.JSONPath
	selectable []selectableField
}

type selectableField struct {
	name string
	path *jsonpath.JSONPath
}

// NewVersion builds the Version named version of crd; an error when crd has
// no such version or its schema cannot be served.
func NewVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Version, error) {
	var ver *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == version {
			ver = &crd.Spec.Versions[i]
			break
		}
	}
	if ver == nil {
		return nil, fmt.Errorf("version %s not found in CustomResourceDefinition %s", version, crd.Name)
	}

	// Upstream serves the accepted kind; fall back to the requested one for
	// CRDs that no naming controller has looked at yet.
	kind := crd.Status.AcceptedNames.Kind
	if kind == "" {
		kind = crd.Spec.Names.Kind
	}
	v := &Version{
		kind:                  schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: kind},
		namespaced:            crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}

	var props *apiextensions.JSONSchemaProps
	if ver.Schema != nil {
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(ver.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("convert schema of %s/%s: %w", crd.Name, version, err)
		}
		props = internal.OpenAPIV3Schema
	}
	if props != nil {
		s, err := structuralschema.NewStructural(props)
		if err != nil && !crd.Spec.PreserveUnknownFields {
			return nil, fmt.Errorf("schema of %s/%s is not structural: %w", crd.Name, version, err)
		}
		if err == nil {
			// Defaults are shared with props; copy before PruneDefaults
			// rewrites them.
			s = s.DeepCopy()
			if !crd.Spec.PreserveUnknownFields {
				if err := structuraldefaulting.PruneDefaults(s); err != nil {
					return nil, fmt.Errorf("prune defaults of %s/%s: %w", crd.Name, version, err)
				}
			}
			v.structural = s
			v.defaults = defaultsOnly(s)
			v.embedded = anySchema(s, func(s *structuralschema.Structural) bool { return s.XEmbeddedResource })
			v.listTypes = anySchema(s, func(s *structuralschema.Structural) bool {
				return s.XListType != nil && (*s.XListType == "set" || *s.XListType == "map")
			})
			v.cel = cel.NewValidator(s, true, celconfig.PerCallLimit)
		}
	}
	validator, openapiSchema, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("schema validator of %s/%s: %w", crd.Name, version, err)
	}
	v.validator = reusedValidator{SchemaValidator: validator, create: newCreateValidator(openapiSchema)}

	if sub := ver.Subresources; sub != nil {
		if sub.Status != nil {
			v.hasStatus = true
			// The status subresource validates status against its own
			// schema, with paths rooted at "status".
			if props != nil {
				if st, ok := props.Properties["status"]; ok {
					if v.statusValidator, _, err = apiservervalidation.NewSchemaValidator(&st); err != nil {
						return nil, fmt.Errorf("status validator of %s/%s: %w", crd.Name, version, err)
					}
				}
			}
		}
		if sub.Scale != nil {
			v.scale = &apiextensions.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, v.scale, nil); err != nil {
				return nil, fmt.Errorf("convert scale subresource of %s/%s: %w", crd.Name, version, err)
			}
		}
	}

	v.buildColumns(ver.AdditionalPrinterColumns)
	v.buildSelectableFields(ver.SelectableFields)
	return v, nil
}

// GroupVersionKind is the kind objects of this version must declare.
func (v *Version) GroupVersionKind() schema.GroupVersionKind { return v.kind }

// HasStatus reports whether the version has the status subresource.
func (v *Version) HasStatus() bool { return v.hasStatus }

// HasScale reports whether the version has the scale subresource.
func (v *Version) HasScale() bool { return v.scale != nil }

// Default applies the schema's defaults to obj in place. Upstream runs it on
// every decode: on writes after pruning, and on reads of stored objects so
// that defaults added to a schema later show up in old objects.
func (v *Version) Default(obj map[string]any) {
	if v.defaults == nil {
		return
	}
	structuraldefaulting.Default(obj, v.defaults)
}

// defaultsOnly is s without the schemas that neither hold a default nor have one below them;
// nil when none is left. Defaulting with it does what defaulting with s does (a schema
// without defaults changes nothing), without walking the rest of the object.
func defaultsOnly(s *structuralschema.Structural) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	out := *s
	out.Properties = nil
	for name, prop := range s.Properties {
		if d := defaultsOnly(&prop); d != nil {
			if out.Properties == nil {
				out.Properties = map[string]structuralschema.Structural{}
			}
			out.Properties[name] = *d
		}
	}
	out.Items = defaultsOnly(s.Items)
	out.AdditionalProperties = nil
	if ap := s.AdditionalProperties; ap != nil {
		if d := defaultsOnly(ap.Structural); d != nil {
			out.AdditionalProperties = &structuralschema.StructuralOrBool{Structural: d, Bool: ap.Bool}
		}
	}
	if out.Default.Object == nil && out.Properties == nil && out.Items == nil && out.AdditionalProperties == nil {
		return nil
	}
	return &out
}

// Prune drops the fields of obj that the schema does not specify, except
// under x-kubernetes-preserve-unknown-fields, and nulls that are neither
// nullable nor defaulted. apiVersion and kind are kept; metadata at the root
// and in embedded resources is reduced to the fields of ObjectMeta, dropping
// malformed ones (as upstream does when it reads stored objects).
func (v *Version) Prune(obj map[string]any) { v.prune(obj, false) }

// PruneUnknown is Prune that also returns the paths of the fields it dropped from outside
// metadata ("spec.colour"), which strict field validation reports as Kubernetes does.
func (v *Version) PruneUnknown(obj map[string]any) []string { return v.prune(obj, true) }

func (v *Version) prune(obj map[string]any, track bool) []string {
	var unknown []string
	kind, foundKind := obj["kind"]
	apiVersion, foundAPIVersion := obj["apiVersion"]
	// Metadata goes through ObjectMeta and back, which drops unknown and malformed fields;
	// metadata already in ObjectMeta's shape would come back the same, so it is left as is.
	var meta *metav1.ObjectMeta
	foundMeta := false
	if m, ok := obj["metadata"].(map[string]any); !ok || !wellFormedMetadata(m) {
		var err error
		meta, foundMeta, _, err = schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{DropMalformedFields: true})
		if err != nil {
			// metadata is not an object; leave it for Validate to report.
			foundMeta = false
		}
	}

	if !v.preserveUnknownFields {
		unknown = structuralpruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: track})
		if v.structural != nil && hasNull(obj) {
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
		}
	}
	if v.embedded {
		// Embedded resources: type-check TypeMeta and reduce their metadata.
		_ = schemaobjectmeta.Coerce(nil, obj, v.structural, false, true)
	}

	if foundKind {
		obj["kind"] = kind
	}
	if foundAPIVersion {
		obj["apiVersion"] = apiVersion
	}
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err == nil && meta.CreationTimestamp.IsZero() {
			// ObjectMeta encodes a zero time as null; the registry sets it.
			unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
		}
	}
	return unknown
}

// anySchema reports whether s or any schema under it satisfies f.
func anySchema(s *structuralschema.Structural, f func(*structuralschema.Structural) bool) bool {
	if s == nil {
		return false
	}
	if f(s) {
		return true
	}
	for k := range s.Properties {
		p := s.Properties[k]
		if anySchema(&p, f) {
			return true
		}
	}
	if s.AdditionalProperties != nil && anySchema(s.AdditionalProperties.Structural, f) {
		return true
	}
	return anySchema(s.Items, f)
}

// hasNull reports whether v holds a null anywhere: only then can there be nulls to prune.
func hasNull(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range v {
			if hasNull(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasNull(e) {
				return true
			}
		}
	}
	return false
}

// reusedValidator checks new objects with one schema validator built in advance, as
// Kubernetes does when ratcheting is off (its ratcheting validator builds one per call, a
// third of a create's validation); updates keep the ratcheting validator. A kube-openapi
// SchemaValidator holds no state between calls, so concurrent requests share it.
type reusedValidator struct {
	apiservervalidation.SchemaValidator
	create *validate.SchemaValidator
}

func (r reusedValidator) Validate(obj any, _ ...apiservervalidation.ValidationOption) *validate.Result {
	return r.create.Validate(obj)
}

// newCreateValidator is kube-openapi's validator of root that also reuses the validators of
// the schemas below it: kube-openapi builds a validator for every field of every object at
// every call, most of a create's validation. Those reached from the root through named
// properties are built here once, keyed by the path kube-openapi gives them ("spec.replicas");
// fields under arrays (their paths carry indices) are still built per call. Names with a dot
// are left out, so that a path names one schema: in a structural schema an object has either
// properties or additionalProperties, so no map key's path can equal a property's.
func newCreateValidator(root *spec.Schema) *validate.SchemaValidator {
	built := map[string]*validate.SchemaValidator{}
	reuse := func(o *validate.SchemaValidatorOptions) {
		o.NewValidatorForField = func(_ string, schema *spec.Schema, rootSchema any, path string, formats strfmt.Registry, opts ...validate.Option) validate.ValueValidator {
			if v, ok := built[path]; ok {
				return v
			}
			return validate.NewSchemaValidator(schema, rootSchema, path, formats, opts...)
		}
	}
	var walk func(s *spec.Schema, path string)
	walk = func(s *spec.Schema, path string) {
		for name, prop := range s.Properties {
			if strings.Contains(name, ".") {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			built[p] = validate.NewSchemaValidator(&prop, root, p, strfmt.Default, reuse)
			walk(&prop, p)
		}
	}
	walk(root, "")
	return validate.NewSchemaValidator(root, nil, "", strfmt.Default, reuse)
}

// wellFormedMetadata reports whether m holds only ObjectMeta fields, each in the shape
// ObjectMeta decodes and encodes unchanged. Owner references and managed fields take the
// full round trip.
func wellFormedMetadata(m map[string]any) bool {
	for k, val := range m {
		switch k {
		case "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion":
			if _, ok := val.(string); !ok {
				return false
			}
		case "creationTimestamp", "deletionTimestamp":
			t, ok := val.(string)
			if !ok {
				return false
			}
			if parsed, err := time.Parse(time.RFC3339, t); err != nil || parsed.UTC().Format(time.RFC3339) != t {
				return false
			}
		case "generation", "deletionGracePeriodSeconds":
			if _, ok := val.(int64); !ok {
				return false
			}
		case "labels", "annotations":
			mm, ok := val.(map[string]any)
			if !ok {
				return false
			}
			for _, x := range mm {
				if _, ok := x.(string); !ok {
					return false
				}
			}
		case "finalizers":
			l, ok := val.([]any)
			if !ok {
				return false
			}
			for _, x := range l {
				if _, ok := x.(string); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}
