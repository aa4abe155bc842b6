package crdschema

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDefaultDefinition(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.com",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
	}}
	DefaultDefinition(crd)
	got := []string{crd.Spec.Names.Singular, crd.Spec.Names.ListKind}
	if crd.Spec.Conversion == nil {
		t.Fatal("spec.conversion not defaulted")
	}
	got = append(got, string(crd.Spec.Conversion.Strategy))
	want := []string{"gadget", "GadgetList", "None"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// fieldErr is the part of a field.Error a test pins down: the detail is
// matched by substring because some embed whole Go values.
type fieldErr struct {
	Type   field.ErrorType
	Field  string
	Detail string
}

func matchErrors(t *testing.T, errs field.ErrorList, want []fieldErr) {
	t.Helper()
	var got []fieldErr
	for _, e := range errs {
		f := fieldErr{Type: e.Type, Field: e.Field, Detail: e.Detail}
		for _, w := range want {
			if w.Type == e.Type && w.Field == e.Field && strings.Contains(e.Detail, w.Detail) {
				f.Detail = w.Detail
				break
			}
		}
		got = append(got, f)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s\nall: %v", diff, errs)
	}
}

func TestValidateDefinitionCreate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinition)
		want   []fieldErr
	}{
		{name: "valid", modify: func(*apiextensionsv1.CustomResourceDefinition) {}},
		{
			name:   "no storage version",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions", "must have exactly one version marked as storage version"},
				{field.ErrorTypeInvalid, "status.storedVersions", "must have at least one stored version"},
			},
		},
		{
			name:   "two storage versions",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[1].Storage = true },
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions", "must have exactly one version marked as storage version"},
				{field.ErrorTypeInvalid, "status.storedVersions", "must have the storage version v2"},
			},
		},
		{
			name: "non-structural schema",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				spec.Properties["ratio"] = apiextensionsv1.JSONSchemaProps{Description: "no type"}
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			},
			want: []fieldErr{
				{field.ErrorTypeRequired, "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[ratio].type", "must not be empty for specified object fields"},
			},
		},
		{
			name: "printer column path without a leading dot",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].AdditionalPrinterColumns[0].JSONPath = "spec.replicas"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions[0].additionalPrinterColumns[0].JSONPath", "must be a simple json path starting with ."},
			},
		},
		{
			name: "printer column type unknown",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].AdditionalPrinterColumns[0].Type = "int"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions[0].additionalPrinterColumns[0].type", "must be one of"},
			},
		},
		{
			name:   "name is not plural.group",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "widget.example.com" },
			want: []fieldErr{
				{field.ErrorTypeInvalid, "metadata.name", `must be spec.names.plural+"."+spec.group`},
			},
		},
		{
			name: "group without a dot",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Group = "example"
				c.Name = "widgets.example"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.group", "should be a domain with at least one dot"},
			},
		},
		{
			name: "scale spec replicas outside spec",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Subresources.Scale.SpecReplicasPath = ".status.replicas"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions[0].subresources.scale.specReplicasPath", "should be a json path under .spec"},
			},
		},
		{
			name: "selectable field not in schema",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].SelectableFields[0].JSONPath = ".spec.missing"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions[0].selectableFields[0].jsonPath", "does not refer to a valid field"},
			},
		},
		{
			name:   "version without schema",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[1].Schema = nil },
			want: []fieldErr{
				{field.ErrorTypeRequired, "spec.versions[1].schema.openAPIV3Schema", ""},
			},
		},
		{
			name: "bad CEL rule",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				spec := c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				spec.XValidations[0].Rule = "self.replicas >"
				c.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule", "compilation failed"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := widgets(t)
			tt.modify(crd)
			// As the registry does on create: status is reset and the
			// storage version recorded before validation.
			PrepareDefinition(crd, nil)
			matchErrors(t, ValidateDefinition(crd, nil), tt.want)
		})
	}
}

func TestValidateDefinitionUpdate(t *testing.T) {
	stored := func(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
		old := widgets(t)
		PrepareDefinition(old, nil)
		old.ResourceVersion = "7"
		return old
	}
	tests := []struct {
		name   string
		modify func(*apiextensionsv1.CustomResourceDefinition)
		want   []fieldErr
	}{
		{name: "unchanged"},
		{
			name: "storage moves to v2",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
			},
		},
		{
			name: "group is immutable",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Group = "example.org"
				c.Name = "widgets.example.org"
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "metadata.name", "field is immutable"},
				{field.ErrorTypeInvalid, "spec.group", "field is immutable"},
			},
		},
		{
			name: "stored version removed from spec",
			modify: func(c *apiextensionsv1.CustomResourceDefinition) {
				c.Spec.Versions = c.Spec.Versions[1:]
				c.Spec.Versions[0].Storage = true
			},
			want: []fieldErr{
				{field.ErrorTypeInvalid, "status.storedVersions[0]", "missing from spec.versions; v1 was previously a storage version"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(t)
			crd := old.DeepCopy()
			if tt.modify != nil {
				tt.modify(crd)
			}
			PrepareDefinition(crd, old)
			matchErrors(t, ValidateDefinition(crd, old), tt.want)
		})
	}
}

func TestPrepareDefinition(t *testing.T) {
	old := widgets(t)
	old.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: "Established", Status: "True"}}
	PrepareDefinition(old, nil)
	if old.Generation != 1 || len(old.Status.Conditions) != 0 {
		t.Fatalf("create: generation %d conditions %v, want 1 and none", old.Generation, old.Status.Conditions)
	}
	old.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: "Established", Status: "True"}}

	same := old.DeepCopy()
	same.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	PrepareDefinition(same, old)
	if same.Generation != 1 || len(same.Status.Conditions) != 1 {
		t.Errorf("unchanged spec: generation %d conditions %v, want 1 and old's", same.Generation, same.Status.Conditions)
	}

	moved := old.DeepCopy()
	moved.Spec.Versions[0].Storage, moved.Spec.Versions[1].Storage = false, true
	PrepareDefinition(moved, old)
	if diff := cmp.Diff([]string{"v1", "v2"}, moved.Status.StoredVersions); diff != "" || moved.Generation != 2 {
		t.Errorf("storage moved: generation %d, storedVersions (-want +got):\n%s", moved.Generation, diff)
	}
}
