package v1

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// crdFile is the hand-written CustomResourceDefinition the chart installs.
var crdFile = filepath.Join("..", "..", "..", "e2e", "testdata", "helm", "echo-operator", "crds", "echoapps.demo.minik8s.io.yaml")

// openAPISchema is the part of an OpenAPI schema the comparison reads.
type openAPISchema struct {
	Type       string                   `json:"type"`
	Required   []string                 `json:"required"`
	Properties map[string]openAPISchema `json:"properties"`
	Items      *openAPISchema           `json:"items"`
}

type column struct {
	Name     string `json:"name"`
	JSONPath string `json:"jsonPath"`
}

type crd struct {
	Spec struct {
		Group string `json:"group"`
		Scope string `json:"scope"`
		Names struct {
			Kind     string `json:"kind"`
			ListKind string `json:"listKind"`
			Plural   string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Name         string `json:"name"`
			Subresources struct {
				Scale struct {
					Spec     string `json:"specReplicasPath"`
					Status   string `json:"statusReplicasPath"`
					Selector string `json:"labelSelectorPath"`
				} `json:"scale"`
			} `json:"subresources"`
			Columns []column `json:"additionalPrinterColumns"`
			Schema  struct {
				OpenAPIV3Schema openAPISchema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

func loadCRD(t *testing.T) crd {
	t.Helper()
	data, err := os.ReadFile(crdFile)
	if err != nil {
		t.Fatal(err)
	}
	var c crd
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", crdFile, err)
	}
	if len(c.Spec.Versions) != 1 {
		t.Fatalf("%s has %d versions, want 1", crdFile, len(c.Spec.Versions))
	}
	return c
}

// jsonFields returns the JSON names of a struct's fields and those without omitempty or
// omitzero (which the schema must require).
func jsonFields(typ reflect.Type) (names, required []string) {
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			required = append(required, name)
		}
	}
	slices.Sort(names)
	slices.Sort(required)
	return names, required
}

func propertyNames(s openAPISchema) []string {
	var names []string
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// TestCRDMatchesTypes keeps the hand-written schema and the Go types saying the same thing.
func TestCRDMatchesTypes(t *testing.T) {
	c := loadCRD(t)
	v := c.Spec.Versions[0]
	root := v.Schema.OpenAPIV3Schema
	for _, tc := range []struct {
		name   string
		schema openAPISchema
		typ    reflect.Type
	}{
		{"spec", root.Properties["spec"], reflect.TypeFor[EchoAppSpec]()},
		{"status", root.Properties["status"], reflect.TypeFor[EchoAppStatus]()},
		{"condition", *root.Properties["status"].Properties["conditions"].Items, reflect.TypeFor[metav1.Condition]()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, required := jsonFields(tc.typ)
			if diff := cmp.Diff(names, propertyNames(tc.schema)); diff != "" {
				t.Errorf("%s: schema properties differ from the Go fields (-go +schema):\n%s", tc.name, diff)
			}
			got := slices.Sorted(slices.Values(tc.schema.Required))
			if diff := cmp.Diff(required, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: required fields differ (-go +schema):\n%s", tc.name, diff)
			}
		})
	}
	ids := []struct{ name, got, want string }{
		{"group", c.Spec.Group, GroupVersion.Group},
		{"version", v.Name, GroupVersion.Version},
		{"kind", c.Spec.Names.Kind, reflect.TypeFor[EchoApp]().Name()},
		{"listKind", c.Spec.Names.ListKind, reflect.TypeFor[EchoAppList]().Name()},
		{"plural", c.Spec.Names.Plural, "echoapps"},
		{"scope", c.Spec.Scope, "Namespaced"},
	}
	for _, id := range ids {
		if id.got != id.want {
			t.Errorf("%s %q, want %q", id.name, id.got, id.want)
		}
	}
	// Every path the CRD points at names a field of the schema.
	paths := []string{v.Subresources.Scale.Spec, v.Subresources.Scale.Status, v.Subresources.Scale.Selector}
	for _, col := range v.Columns {
		paths = append(paths, col.JSONPath)
	}
	for _, p := range paths {
		if p == ".metadata.creationTimestamp" {
			continue
		}
		s, ok := root, true
		for _, part := range strings.Split(strings.TrimPrefix(p, "."), ".") {
			if s, ok = s.Properties[part]; !ok {
				t.Errorf("path %s: no field %q in the schema", p, part)
				break
			}
		}
	}
	if diff := cmp.Diff([]string{"Replicas", "Ready", "Tier", "Age"}, columnNames(v.Columns)); diff != "" {
		t.Errorf("printer columns (-want +got):\n%s", diff)
	}
}

func columnNames(cols []column) []string {
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return names
}
