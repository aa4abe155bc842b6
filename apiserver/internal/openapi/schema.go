package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const (
	extGVK           = "x-kubernetes-group-version-kind"
	extPatchStrategy = "x-kubernetes-patch-strategy"
	extPatchMergeKey = "x-kubernetes-patch-merge-key"
	extIntOrString   = "x-kubernetes-int-or-string"
)

// dialect is what tells the schemas of one OpenAPI version from the other's; everything else
// is reflected the same way for both.
type dialect struct {
	// refPrefix is where references point: the components of v3, the definitions of v2.
	refPrefix string
	// v2 keeps a property's description beside its $ref, as Kubernetes serves v2 (OpenAPI 3.0
	// ignores $ref siblings, so v3 wraps the reference in allOf), and gives int-or-string
	// values the string type Swagger 2.0 needs, as Kubernetes does: its clients accept a
	// number where a string is expected.
	v2 bool
}

var (
	v3Dialect = dialect{refPrefix: "#/components/schemas/"}
	v2Dialect = dialect{refPrefix: "#/definitions/", v2: true}
)

func (d dialect) ref(name string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(d.refPrefix + name)}}
}

// required lists the only fields marked required. Kubernetes marks more, but the schema is
// here for kubectl explain and tooling, not to reject manifests the server would accept, so
// only fields no valid object can lack are listed.
var required = map[string][]string{
	"io.k8s.api.core.v1.PodSpec":   {"containers"},
	"io.k8s.api.core.v1.Container": {"name"},
}

// schemas reflects Go types into named schemas, Kubernetes style.
type schemas struct {
	dialect
	defs map[string]spec.Schema
}

func newSchemas(d dialect) *schemas { return &schemas{dialect: d, defs: map[string]spec.Schema{}} }

// canonicalName is the Kubernetes OpenAPI name of a Go type: the import path with its domain
// reversed, then the type name (k8s.io/api/core/v1.Pod -> io.k8s.api.core.v1.Pod).
func canonicalName(t reflect.Type) string {
	path := t.PkgPath()
	domain, rest, _ := strings.Cut(path, "/")
	parts := strings.Split(domain, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	name := strings.Join(parts, ".")
	if rest != "" {
		name += "." + strings.ReplaceAll(rest, "/", ".")
	}
	return name + "." + t.Name()
}

// define makes sure the named struct type t has a component schema and returns its name.
func (s *schemas) define(t reflect.Type) string {
	name := canonicalName(t)
	if _, ok := s.defs[name]; ok {
		return name
	}
	// Reserve the name first so self-referencing types terminate.
	s.defs[name] = spec.Schema{}
	s.defs[name] = s.structSchema(t, name)
	return name
}

// setGVK marks the schema of t as the schema of the given kinds, besides those it already
// names: v2's one document lists DeleteOptions under every group version.
func (s *schemas) setGVK(t reflect.Type, gvks ...schema.GroupVersionKind) string {
	name := s.define(t)
	def := s.defs[name]
	list, _ := def.Extensions[extGVK].([]any)
	for _, gvk := range gvks {
		entry := map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
		if !slices.ContainsFunc(list, func(e any) bool { return reflect.DeepEqual(e, entry) }) {
			list = append(list, entry)
		}
	}
	def.AddExtension(extGVK, list)
	s.defs[name] = def
	return name
}

type swaggerDocer interface{ SwaggerDoc() map[string]string }

type openAPITyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

var (
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	marshalerType   = reflect.TypeFor[json.Marshaler]()
)

func docs(t reflect.Type) map[string]string {
	if d, ok := reflect.Zero(t).Interface().(swaggerDocer); ok {
		return d.SwaggerDoc()
	}
	return nil
}

// structSchema is the component schema of a named struct type.
func (s *schemas) structSchema(t reflect.Type, name string) spec.Schema {
	doc := docs(t)
	out := spec.Schema{SchemaProps: spec.SchemaProps{Description: doc[""]}}
	switch {
	case t == intOrStringType:
		out.Format = "int-or-string"
		out.AddExtension(extIntOrString, true)
		if s.v2 {
			out.Type = []string{"string"}
		}
		return out
	case t == quantityType:
		// Quantities are written as strings ("100m") or plain numbers (2).
		out.AddExtension(extIntOrString, true)
		if s.v2 {
			out.Type = []string{"string"}
		}
		return out
	}
	if typer, ok := reflect.Zero(t).Interface().(openAPITyper); ok {
		out.Type = typer.OpenAPISchemaType()
		out.Format = typer.OpenAPISchemaFormat()
		return out
	}
	if t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		// Free-form payloads such as RawExtension and FieldsV1.
		out.Type = []string{"object"}
		return out
	}
	out.Type = []string{"object"}
	out.Properties = map[string]spec.Schema{}
	s.addFields(&out, t, doc)
	for _, f := range required[name] {
		if _, ok := out.Properties[f]; ok {
			out.Required = append(out.Required, f)
		}
	}
	if len(out.Properties) == 0 {
		out.Properties = nil
	}
	return out
}

// addFields adds the JSON fields of struct t to out, flattening inline embedded structs.
func (s *schemas) addFields(out *spec.Schema, t reflect.Type, doc map[string]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jsonName, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && (jsonName == "" || strings.Contains(opts, "inline")) {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				s.addFields(out, et, docs(et))
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		prop := s.fieldSchema(f.Type, doc[jsonName])
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			prop.AddExtension(extPatchStrategy, ps)
		}
		if mk := f.Tag.Get("patchMergeKey"); mk != "" {
			prop.AddExtension(extPatchMergeKey, mk)
		}
		out.Properties[jsonName] = prop
	}
}

// fieldSchema is the schema of a property of type t: a reference for named structs, inline
// otherwise.
func (s *schemas) fieldSchema(t reflect.Type, description string) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t.Name() != "" {
		ref := s.ref(s.define(t))
		if description == "" {
			return ref
		}
		if s.v2 {
			ref.Description = description
			return ref
		}
		// Siblings of $ref are ignored in OpenAPI 3.0; allOf keeps the description, as
		// Kubernetes does.
		return spec.Schema{SchemaProps: spec.SchemaProps{Description: description, AllOf: []spec.Schema{ref}}}
	}
	out := s.inline(t)
	out.Description = description
	return out
}

// inline is the schema of an unnamed or non-struct type.
func (s *schemas) inline(t reflect.Type) spec.Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	typed := func(typ, format string) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{typ}, Format: format}}
	}
	switch t.Kind() {
	case reflect.String:
		return typed("string", "")
	case reflect.Bool:
		return typed("boolean", "")
	case reflect.Int32, reflect.Uint16, reflect.Int16, reflect.Int8, reflect.Uint8:
		return typed("integer", "int32")
	case reflect.Int64, reflect.Int, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return typed("integer", "int64")
	case reflect.Float32:
		return typed("number", "float")
	case reflect.Float64:
		return typed("number", "double")
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return typed("string", "byte")
		}
		item := s.fieldSchema(t.Elem(), "")
		out := typed("array", "")
		out.Items = &spec.SchemaOrArray{Schema: &item}
		return out
	case reflect.Map:
		val := s.fieldSchema(t.Elem(), "")
		out := typed("object", "")
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: &val}
		return out
	case reflect.Struct:
		out := typed("object", "")
		out.Properties = map[string]spec.Schema{}
		s.addFields(&out, t, nil)
		return out
	default:
		// interface{} and anything else unforeseen: accept any JSON object.
		out := typed("object", "")
		out.AddExtension("x-kubernetes-preserve-unknown-fields", true)
		return out
	}
}

// structType is the struct type behind v, a pointer to a served kind.
func structType(v any) (reflect.Type, error) {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || t.Name() == "" {
		return nil, fmt.Errorf("openapi: %T is not a named struct", v)
	}
	return t, nil
}
