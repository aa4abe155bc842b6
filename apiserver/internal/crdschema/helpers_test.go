package crdschema

import (
	"os"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// widgets returns the test CRD of testdata/widgets.yaml, defaulted.
func widgets(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile("testdata/widgets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		t.Fatal(err)
	}
	DefaultDefinition(crd)
	return crd
}

func widgetVersion(t *testing.T, name string) *Version {
	t.Helper()
	v, err := NewVersion(widgets(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// object parses a YAML custom object the way the server decodes JSON
// (numbers as int64 or float64).
func object(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

// errorStrings renders errs as kubectl shows them, sorted so that tests do
// not depend on the order of map iteration inside the validators.
func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	sort.Strings(out)
	return out
}

func jsonValue(t *testing.T, raw string) *apiextensionsv1.JSON {
	t.Helper()
	return &apiextensionsv1.JSON{Raw: []byte(raw)}
}
