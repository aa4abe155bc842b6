package crdschema

import (
	"encoding/json"
	"slices"
	"testing"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// The create validator reuses the validators of named properties; its answers must be
// kube-openapi's own, paths included, also under arrays, maps and dotted property names.
func TestCreateValidatorAnswersAsKubeOpenAPI(t *testing.T) {
	var root spec.Schema
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{
	  "spec":{"type":"object","required":["name"],"properties":{
	    "name":{"type":"string","minLength":2},
	    "replicas":{"type":"integer","minimum":0},
	    "a.b":{"type":"object","properties":{"c":{"type":"integer"}}},
	    "a":{"type":"object","additionalProperties":{"type":"object","properties":{"c":{"type":"string"}}}},
	    "items":{"type":"array","items":{"type":"object","required":["port"],"properties":{"port":{"type":"integer","maximum":10}}}},
	    "inner":{"type":"object","properties":{"deep":{"type":"object","properties":{"level":{"type":"string","enum":["x","y"]}}}}}}},
	  "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}`), &root); err != nil {
		t.Fatal(err)
	}
	reused := newCreateValidator(&root)
	fresh := validate.NewSchemaValidator(&root, nil, "", strfmt.Default)
	for _, obj := range []string{
		`{"spec":{"name":"ok","replicas":1}}`,
		`{"spec":{"replicas":-1}}`,
		`{"spec":{"name":"x","replicas":"three"}}`,
		`{"spec":{"name":"ok","a.b":{"c":"not a number"},"a":{"b":{"c":7}}}}`,
		`{"spec":{"name":"ok","items":[{"port":3},{"port":11},{}]}}`,
		`{"spec":{"name":"ok","inner":{"deep":{"level":"z"}}},"status":{"ready":"yes"}}`,
		`{"spec":"not an object","status":{}}`,
	} {
		var data map[string]any
		if err := json.Unmarshal([]byte(obj), &data); err != nil {
			t.Fatal(err)
		}
		got, want := messages(reused.Validate(data)), messages(fresh.Validate(data))
		if !slices.Equal(got, want) {
			t.Errorf("%s:\nreused validator %q\nkube-openapi     %q", obj, got, want)
		}
		if len(want) == 0 && obj != `{"spec":{"name":"ok","replicas":1}}` {
			t.Errorf("%s: kube-openapi found nothing wrong; the case tests nothing", obj)
		}
	}
}

func messages(r *validate.Result) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}
