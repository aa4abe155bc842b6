package crdschema

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/yaml"
)

func TestNewVersionUnknown(t *testing.T) {
	if _, err := NewVersion(widgets(t), "v3"); err == nil {
		t.Fatal("NewVersion(v3) succeeded, want an error for a version the CRD lacks")
	}
}

func TestPrune(t *testing.T) {
	tests := []struct {
		name    string
		version string
		in      string
		want    string
	}{
		{
			name:    "unknown fields dropped at every level",
			version: "v1",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nextra: 1\nspec: {color: red, bogus: x, strategy: {type: Recreate, surge: 2}}\nstatus: {replicas: 1, phase: Ready}",
			want:    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, strategy: {type: Recreate}}\nstatus: {replicas: 1}",
		},
		{
			name:    "preserved under x-kubernetes-preserve-unknown-fields",
			version: "v1",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, config: {a: {b: [1, {c: d}]}}}",
			want:    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, config: {a: {b: [1, {c: d}]}}}",
		},
		{
			name:    "whole object preserved when the root preserves",
			version: "v2",
			in:      "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w1}\nanything: {goes: true}",
			want:    "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w1}\nanything: {goes: true}",
		},
		{
			name:    "metadata reduced to ObjectMeta",
			version: "v1",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: ns, generateName: w-, labels: {a: b}, annotations: {c: d}, finalizers: [f], unknown: x}\nspec: {color: red}",
			want:    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: ns, generateName: w-, labels: {a: b}, annotations: {c: d}, finalizers: [f]}\nspec: {color: red}",
		},
		{
			name:    "malformed metadata fields dropped",
			version: "v1",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, labels: [a], generation: x}\nspec: {color: red}",
			want:    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red}",
		},
		{
			name:    "embedded resource keeps its kind and its ObjectMeta",
			version: "v1",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}, bogus: 1}, spec: {x: 1}}}",
			want:    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, template: {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {a: b}}, spec: {x: 1}}}",
		},
		{
			name:    "nulls: kept when nullable or defaulted, dropped otherwise",
			version: "v1",
			in:      "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, note: null, replicas: null, ratio: null}",
			want:    "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, note: null, replicas: null}",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := widgetVersion(t, tt.version)
			got := object(t, tt.in).Object
			v.Prune(got)
			if diff := cmp.Diff(object(t, tt.want).Object, got); diff != "" {
				t.Errorf("Prune (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{
			name: "missing fields of an existing parent",
			in:   "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red}",
			want: "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: 1, minReplicas: 0, strategy: {type: RollingUpdate}}",
		},
		{
			name: "nested default under a parent that has its own default",
			in:   "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, strategy: {maxSurge: 2}}",
			want: "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: 1, minReplicas: 0, strategy: {type: RollingUpdate, maxSurge: 2}}",
		},
		{
			name: "absent parent without a default stays absent",
			in:   "apiVersion: example.com/v1\nkind: Widget",
			want: "apiVersion: example.com/v1\nkind: Widget",
		},
		{
			name: "present parent gets its children's defaults",
			in:   "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, options: {}}",
			want: "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: 1, minReplicas: 0, strategy: {type: RollingUpdate}, options: {verbose: false}}",
		},
		{
			name: "set values win",
			in:   "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: 4, minReplicas: 2, strategy: {type: Recreate}}",
			want: "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: 4, minReplicas: 2, strategy: {type: Recreate}}",
		},
		{
			name: "null of a non-nullable field is defaulted",
			in:   "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: null}",
			want: "apiVersion: example.com/v1\nkind: Widget\nspec: {color: red, replicas: 1, minReplicas: 0, strategy: {type: RollingUpdate}}",
		},
	}
	v := widgetVersion(t, "v1")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := object(t, tt.in).Object
			v.Default(got)
			if diff := cmp.Diff(object(t, tt.want).Object, got); diff != "" {
				t.Errorf("Default (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDefaultOnRead shows why Default also runs on reads: an object stored
// before a field got its default gains it when read with the new schema.
func TestDefaultOnRead(t *testing.T) {
	crd := widgets(t)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	ratio := spec.Properties["ratio"]
	stored := object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red, replicas: 2, minReplicas: 0, strategy: {type: Recreate}}")

	before, err := NewVersion(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	read := stored.DeepCopy()
	before.Default(read.Object)
	if _, found := read.Object["spec"].(map[string]any)["ratio"]; found {
		t.Fatal("ratio defaulted before the schema had a default")
	}

	ratio.Default = jsonValue(t, "0.5")
	spec.Properties["ratio"] = ratio
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	after, err := NewVersion(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	read = stored.DeepCopy()
	after.Default(read.Object)
	if got := read.Object["spec"].(map[string]any)["ratio"]; got != 0.5 {
		t.Errorf("spec.ratio after the schema gained default 0.5: %v", got)
	}
}

func TestScale(t *testing.T) {
	type result struct {
		Spec, Status int32
		Selector     string
		OK, Err      bool
	}
	tests := []struct {
		name    string
		version string
		obj     string
		want    result
	}{
		{
			name: "all paths set", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nspec: {replicas: 3}\nstatus: {replicas: 2, selector: app=w}",
			want: result{Spec: 3, Status: 2, Selector: "app=w", OK: true},
		},
		{
			name: "missing paths read as zero", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget",
			want: result{OK: true},
		},
		{
			name: "wrong type", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nspec: {replicas: three}",
			want: result{OK: true, Err: true},
		},
		{
			name: "no scale subresource", version: "v2",
			obj:  "apiVersion: example.com/v2\nkind: Widget\nspec: {replicas: 3}",
			want: result{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, status, sel, ok, err := widgetVersion(t, tt.version).Scale(object(t, tt.obj))
			got := result{Spec: spec, Status: status, Selector: sel, OK: ok, Err: err != nil}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Scale (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetScale(t *testing.T) {
	v := widgetVersion(t, "v1")
	obj := object(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}")
	if err := v.SetScale(obj, 5); err != nil {
		t.Fatal(err)
	}
	if spec, _, _, _, err := v.Scale(obj); err != nil || spec != 5 {
		t.Errorf("after SetScale(5): spec %d err %v", spec, err)
	}
	if diff := cmp.Diff(map[string]any{"replicas": int64(5)}, obj.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}

	bad := object(t, "apiVersion: example.com/v1\nkind: Widget\nspec: 3")
	if err := v.SetScale(bad, 1); err == nil {
		t.Error("SetScale through a non-object spec succeeded")
	}
	if err := widgetVersion(t, "v2").SetScale(obj, 1); err == nil {
		t.Error("SetScale on a version without scale succeeded")
	}
}

func TestColumns(t *testing.T) {
	names := func(cols []metav1.TableColumnDefinition) [][3]any {
		var out [][3]any
		for _, c := range cols {
			out = append(out, [3]any{c.Name, c.Type, c.Priority})
		}
		return out
	}
	tests := []struct {
		version string
		want    [][3]any
	}{
		{"v1", [][3]any{
			{"Name", "string", int32(0)}, {"Replicas", "integer", int32(0)}, {"Color", "string", int32(0)},
			{"Ready", "boolean", int32(0)}, {"Ratio", "number", int32(1)}, {"Created", "date", int32(0)},
		}},
		// Without additionalPrinterColumns upstream serves NAME and AGE.
		{"v2", [][3]any{{"Name", "string", int32(0)}, {"Age", "date", int32(0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, names(widgetVersion(t, tt.version).Columns())); diff != "" {
				t.Errorf("Columns (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCells(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		version string
		obj     string
		want    []any
	}{
		{
			name: "every type", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, creationTimestamp: '2026-01-02T02:59:05Z'}\nspec: {replicas: 3, color: red, ratio: 0.5}\nstatus: {ready: true}",
			want: []any{"w1", int64(3), "red", true, 0.5, "5m"},
		},
		{
			name: "missing values and wrong types are empty cells", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {replicas: many}\nstatus: {ready: 'yes'}",
			want: []any{"w1", nil, nil, nil, nil, nil},
		},
		{
			name: "integers from floats and numbers from integers", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, creationTimestamp: 'yesterday'}\nspec: {replicas: 2.0, ratio: 2, color: {a: b}}",
			want: []any{"w1", int64(2), `{"a":"b"}`, nil, 2.0, "<invalid>"},
		},
		{
			name: "default age column", version: "v2",
			obj:  "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w2, creationTimestamp: '2025-12-31T03:04:05Z'}",
			want: []any{"w2", "2d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := widgetVersion(t, tt.version)
			got, err := v.CellsAt(object(t, tt.obj), now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Cells (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		name    string
		version string
		obj     string
		want    fields.Set
	}{
		{
			name: "selectable fields", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: ns}\nspec: {color: red, replicas: 3}",
			want: fields.Set{"metadata.name": "w1", "metadata.namespace": "ns", "spec.color": "red", "spec.replicas": "3"},
		},
		{
			name: "unset selectable fields are empty", version: "v1",
			obj:  "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: ns}",
			want: fields.Set{"metadata.name": "w1", "metadata.namespace": "ns", "spec.color": "", "spec.replicas": ""},
		},
		{
			name: "metadata only", version: "v2",
			obj:  "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w2, namespace: ns}\nspec: {color: red}",
			want: fields.Set{"metadata.name": "w2", "metadata.namespace": "ns"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, widgetVersion(t, tt.version).Fields(object(t, tt.obj))); diff != "" {
				t.Errorf("Fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFieldsClusterScoped(t *testing.T) {
	crd := widgets(t)
	crd.Spec.Scope = "Cluster"
	v, err := NewVersion(crd, "v2")
	if err != nil {
		t.Fatal(err)
	}
	got := v.Fields(object(t, "apiVersion: example.com/v2\nkind: Widget\nmetadata: {name: w2}"))
	if diff := cmp.Diff(fields.Set{"metadata.name": "w2"}, got); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
}

// Defaulting with the reduced schema does what defaulting with the whole one does, under
// arrays and maps too.
func TestDefaultsOnlyDefaultsAsTheWholeSchema(t *testing.T) {
	var props apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(`
type: object
properties:
  spec:
    type: object
    properties:
      plain: {type: string}
      nullable: {type: string, nullable: true}
      ports:
        type: array
        items: {type: object, properties: {port: {type: integer}, protocol: {type: string, default: TCP}}}
      names: {type: array, items: {type: string}}
      limits:
        type: object
        additionalProperties: {type: object, properties: {max: {type: integer, default: 10}, min: {type: integer}}}
      labels: {type: object, additionalProperties: {type: string}}
`), &props); err != nil {
		t.Fatal(err)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&props, &internal, nil); err != nil {
		t.Fatal(err)
	}
	whole, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	reduced := defaultsOnly(whole)
	if reduced == nil || len(reduced.Properties["spec"].Properties) != 2 {
		t.Fatalf("reduced schema keeps %v under spec, want ports and limits", reduced)
	}
	for _, in := range []string{
		"kind: W\nspec: {plain: a, nullable: null, names: [x, null], labels: {a: b, c: null}}",
		"kind: W\nspec: {ports: [{port: 1}, {port: 2, protocol: UDP}, null], limits: {cpu: {min: 1}, mem: {max: 3}, gpu: null}}",
		"kind: W\nspec: null",
		"kind: W\nother: {ports: [{}]}",
	} {
		got, want := object(t, in).Object, object(t, in).Object
		structuraldefaulting.Default(want, whole)
		structuraldefaulting.Default(got, reduced)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-whole +reduced):\n%s", in, diff)
		}
	}
}
