package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"minik8s.io/shared/scheme"
)

// Definitions finds the CustomResourceDefinition that serves a custom resource.
type Definitions func(schema.GroupVersionResource) (*apiextensionsv1.CustomResourceDefinition, bool)

const (
	extPreserveUnknown  = "x-kubernetes-preserve-unknown-fields"
	extEmbeddedResource = "x-kubernetes-embedded-resource"
)

// customSchemaName is the name Kubernetes gives the schema of a custom kind: the group with
// its parts reversed, then version and kind (stable.example.com/v1 CronTab ->
// com.example.stable.v1.CronTab), as Go types are named after their reversed domain.
func customSchemaName(gvk schema.GroupVersionKind) string {
	parts := strings.Split(gvk.Group, ".")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "." + gvk.Version + "." + gvk.Kind
}

// defineCustom adds the schemas of custom resource r's kind and list kind, from the
// openAPIV3Schema of crd's version, and returns their names. Like Kubernetes, it publishes
// what the definition declares plus the fields every object has: apiVersion, kind and
// metadata as ObjectMeta.
func (s *schemas) defineCustom(r *scheme.Resource, crd *apiextensionsv1.CustomResourceDefinition) (kind, list string, err error) {
	var declared *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == r.GVK.Version && v.Schema != nil {
			declared = v.Schema.OpenAPIV3Schema
		}
	}
	root := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
	if declared != nil {
		raw, err := json.Marshal(declared)
		if err != nil {
			return "", "", fmt.Errorf("encode the schema of %s: %w", crd.Name, err)
		}
		var parsed spec.Schema
		if err := json.Unmarshal(raw, &parsed); err != nil {
			return "", "", fmt.Errorf("read the schema of %s: %w", crd.Name, err)
		}
		switch {
		case s.v2 && preservesUnknown(&parsed):
			// Swagger 2.0 clients (kubectl's client-side validation) reject fields a schema
			// does not list; an object that keeps unknown fields lists none, or they would
			// refuse the rest.
		default:
			root = parsed
			s.sanitize(&root)
			s.addObjectFields(&root)
		}
	}
	kind = customSchemaName(r.GVK)
	root.AddExtension(extGVK, []any{gvkEntry(r.GVK)})
	s.defs[kind] = root

	listGVK := r.GVK.GroupVersion().WithKind(r.GVK.Kind + "List")
	if k := r.NewList().GetObjectKind().GroupVersionKind().Kind; k != "" {
		listGVK.Kind = k
	}
	list = customSchemaName(listGVK)
	items := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"},
		Description: "List of " + r.Plural + ". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
		Items:       &spec.SchemaOrArray{Schema: ptr(s.ref(kind))}}}
	listSchema := spec.Schema{SchemaProps: spec.SchemaProps{
		Type:        []string{"object"},
		Description: listGVK.Kind + " is a list of " + r.GVK.Kind,
		Required:    []string{"items"},
		Properties: map[string]spec.Schema{
			"items":    items,
			"metadata": s.fieldSchema(reflect.TypeFor[metav1.ListMeta](), "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
		},
	}}
	s.addTypeMeta(&listSchema)
	listSchema.AddExtension(extGVK, []any{gvkEntry(listGVK)})
	s.defs[list] = listSchema
	return kind, list, nil
}

func ptr[T any](v T) *T { return &v }

func gvkEntry(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

func preservesUnknown(sc *spec.Schema) bool {
	b, _ := sc.Extensions.GetBool(extPreserveUnknown)
	return b
}

// addTypeMeta gives sc the apiVersion and kind properties, described as for every kind.
func (s *schemas) addTypeMeta(sc *spec.Schema) {
	doc := docs(reflect.TypeFor[metav1.TypeMeta]())
	if sc.Properties == nil {
		sc.Properties = map[string]spec.Schema{}
	}
	for _, f := range []string{"apiVersion", "kind"} {
		sc.Properties[f] = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Description: doc[f]}}
	}
}

// addObjectFields gives sc what every object has besides its declared fields.
func (s *schemas) addObjectFields(sc *spec.Schema) {
	s.addTypeMeta(sc)
	sc.Properties["metadata"] = s.fieldSchema(reflect.TypeFor[metav1.ObjectMeta](), "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
}

// sanitize rewrites a declared schema for the document's OpenAPI version, and gives embedded
// objects their object fields. OpenAPI v3 keeps what was declared. Swagger 2.0 has no
// nullable, oneOf, anyOf, allOf or not, and kubectl's v2 reader mistakes properties or
// items beside x-kubernetes-preserve-unknown-fields for a closed list, so those go as in
// Kubernetes; so do defaults, which the built-in kinds do not publish either.
func (s *schemas) sanitize(sc *spec.Schema) {
	if s.v2 {
		// Before the children lose their nullable: a required field that may be null need
		// not be sent.
		for name, p := range sc.Properties {
			if p.Nullable {
				sc.Required = slices.DeleteFunc(sc.Required, func(f string) bool { return f == name })
			}
		}
		if sc.AdditionalProperties != nil && sc.AdditionalProperties.Schema != nil && sc.AdditionalProperties.Schema.Nullable {
			sc.Required = nil
		}
	}
	for name, p := range sc.Properties {
		s.sanitize(&p)
		sc.Properties[name] = p
	}
	if sc.Items != nil {
		if sc.Items.Schema != nil {
			s.sanitize(sc.Items.Schema)
		}
		for i := range sc.Items.Schemas {
			s.sanitize(&sc.Items.Schemas[i])
		}
	}
	if sc.AdditionalProperties != nil && sc.AdditionalProperties.Schema != nil {
		s.sanitize(sc.AdditionalProperties.Schema)
	}
	if s.v2 {
		s.toV2(sc)
	}
	if b, _ := sc.Extensions.GetBool(extEmbeddedResource); b && !(s.v2 && preservesUnknown(sc)) {
		s.addObjectFields(sc)
		for _, f := range []string{"kind", "apiVersion"} {
			if !slices.Contains(sc.Required, f) {
				sc.Required = append(sc.Required, f)
			}
		}
	}
}

// toV2 makes one level of sc valid Swagger 2.0 that kubectl reads right; its children are
// done already, and its required list was filtered before them.
func (s *schemas) toV2(sc *spec.Schema) {
	sc.AllOf, sc.OneOf, sc.AnyOf, sc.Not = nil, nil, nil, nil
	sc.Default = nil
	if sc.Nullable {
		// Swagger 2.0 cannot say "this type or null": leave the value untyped.
		sc.Type, sc.Nullable = nil, false
		sc.Items, sc.Properties = nil, nil
	}
	if preservesUnknown(sc) {
		sc.Items, sc.Properties = nil, nil
		if sc.Type.Contains("object") {
			sc.Type = nil
		}
	}
	if sc.Items == nil && sc.Type.Contains("array") {
		// kubectl's v2 reader cannot take an array without an item schema.
		sc.Type = nil
	}
}
