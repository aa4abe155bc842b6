package apply

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

func obj(t *testing.T, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const podV1 = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web, tier: front}
spec:
  containers:
  - name: app
    image: nginx:1
  - name: side
    image: busybox
`

// live is what the server holds after creating desired: the annotation plus fields the server
// and other writers add.
func live(t *testing.T, desired string, extra func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	created, err := WithLastApplied(obj(t, desired))
	if err != nil {
		t.Fatal(err)
	}
	created.SetResourceVersion("12")
	created.SetUID("u-1")
	if err := unstructured.SetNestedField(created.Object, "Running", "status", "phase"); err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(created)
	}
	return created
}

func TestDecide(t *testing.T) {
	fn := `
apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: f, namespace: default}
spec: {handler: main.handle, source: {main.py: "v1"}}
`
	tests := []struct {
		name      string
		desired   string
		live      *unstructured.Unstructured
		action    Action
		patchType types.PatchType
		// wantPatch is the patch without the annotation, which always changes with the content.
		wantPatch map[string]any
	}{
		{name: "absent is created", desired: podV1, action: Create},
		{name: "same as last applied is unchanged", desired: podV1, live: live(t, podV1, nil), action: Unchanged},
		{name: "fields owned by others are kept", desired: podV1, live: live(t, podV1, func(u *unstructured.Unstructured) {
			l := u.GetLabels()
			l["added-by-controller"] = "x"
			u.SetLabels(l)
			_ = unstructured.SetNestedField(u.Object, "n1", "spec", "nodeName")
		}), action: Unchanged},
		{name: "image change merges containers by name", action: Configure, patchType: types.StrategicMergePatchType,
			desired: podV1Image("nginx:2"), live: live(t, podV1, nil),
			wantPatch: map[string]any{"spec": map[string]any{
				"$setElementOrder/containers": []any{map[string]any{"name": "app"}, map[string]any{"name": "side"}},
				"containers":                  []any{map[string]any{"image": "nginx:2", "name": "app"}},
			}}},
		{name: "label removed from the file is deleted", action: Configure, patchType: types.StrategicMergePatchType,
			desired: podWithoutTier, live: live(t, podV1, nil),
			wantPatch: map[string]any{"metadata": map[string]any{"labels": map[string]any{"tier": nil}}}},
		{name: "serverless kinds use JSON merge patch", action: Configure, patchType: types.MergePatchType,
			desired: fnV2, live: live(t, fn, nil),
			wantPatch: map[string]any{"spec": map[string]any{"source": map[string]any{"main.py": "v2"}}}},
		{name: "serverless unchanged", desired: fn, live: live(t, fn, nil), action: Unchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(obj(t, tt.desired), tt.live)
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tt.action || d.PatchType != tt.patchType {
				t.Fatalf("decision = %s %s (patch %s), want %s %s", d.Action, d.PatchType, d.Patch, tt.action, tt.patchType)
			}
			switch d.Action {
			case Create:
				la := d.Object.GetAnnotations()[LastAppliedAnnotation]
				var got map[string]any
				if err := json.Unmarshal([]byte(la), &got); err != nil {
					t.Fatalf("annotation is not JSON: %v", err)
				}
				if diff := cmp.Diff(obj(t, tt.desired).Object, got); diff != "" {
					t.Errorf("last-applied (-want +got):\n%s", diff)
				}
			case Configure:
				var got map[string]any
				if err := json.Unmarshal(d.Patch, &got); err != nil {
					t.Fatal(err)
				}
				md, _ := got["metadata"].(map[string]any)
				ann, _ := md["annotations"].(map[string]any)
				if _, ok := ann[LastAppliedAnnotation]; !ok {
					t.Errorf("patch %s does not update the last-applied annotation", d.Patch)
				}
				delete(ann, LastAppliedAnnotation)
				if len(ann) == 0 {
					delete(md, "annotations")
				}
				if len(md) == 0 {
					delete(got, "metadata")
				}
				if diff := cmp.Diff(tt.wantPatch, got); diff != "" {
					t.Errorf("patch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestDecideRefusesRename(t *testing.T) {
	l := live(t, podV1, func(u *unstructured.Unstructured) { u.SetName("other") })
	if _, err := Decide(obj(t, podV1), l); err == nil {
		t.Error("Decide accepted a patch that renames the object")
	}
}

func podV1Image(image string) string {
	return `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web, tier: front}
spec:
  containers:
  - name: app
    image: ` + image + `
  - name: side
    image: busybox
`
}

const podWithoutTier = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx:1
  - name: side
    image: busybox
`

const fnV2 = `
apiVersion: serverless.minik8s.io/v1
kind: Function
metadata: {name: f, namespace: default}
spec: {handler: main.handle, source: {main.py: "v2"}}
`

// A Function's source is recorded by digest in the annotation: a 1 MiB source fits the 256 KiB
// of annotations, a changed file is still sent, and a file removed from the manifest is deleted.
func TestFunctionSourceRecordedByDigest(t *testing.T) {
	fnWith := func(files string) string {
		return "apiVersion: serverless.minik8s.io/v1\nkind: Function\nmetadata: {name: f, namespace: default}\nspec: {handler: a.handle, source: {" + files + "}}\n"
	}
	big := strings.Repeat("x", 600<<10)
	created, err := WithLastApplied(obj(t, fnWith(`a.py: "`+big+`"`)))
	if err != nil {
		t.Fatal(err)
	}
	la := created.GetAnnotations()[LastAppliedAnnotation]
	if len(la) > 1024 {
		t.Fatalf("the annotation is %d bytes", len(la))
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(la), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a.py": fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(big)))}
	if diff := cmp.Diff(want, rec["spec"].(map[string]any)["source"]); diff != "" {
		t.Errorf("recorded source (-want +got):\n%s", diff)
	}
	if got, _, _ := unstructured.NestedString(created.Object, "spec", "source", "a.py"); got != big {
		t.Errorf("the object sent lost its source")
	}

	tests := []struct {
		name, from, to string
		action         Action
		wantSource     map[string]any
	}{
		{name: "unchanged", from: `a.py: "1", b.py: "2"`, to: `a.py: "1", b.py: "2"`, action: Unchanged},
		{name: "changed file", from: `a.py: "1", b.py: "2"`, to: `a.py: "1", b.py: "3"`, action: Configure, wantSource: map[string]any{"b.py": "3"}},
		{name: "removed file", from: `a.py: "1", b.py: "2"`, to: `a.py: "1"`, action: Configure, wantSource: map[string]any{"b.py": nil}},
		{name: "added file", from: `a.py: "1"`, to: `a.py: "1", c.py: "4"`, action: Configure, wantSource: map[string]any{"c.py": "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(obj(t, fnWith(tt.to)), live(t, fnWith(tt.from), nil))
			if err != nil {
				t.Fatal(err)
			}
			if d.Action != tt.action {
				t.Fatalf("action %s (patch %s), want %s", d.Action, d.Patch, tt.action)
			}
			if tt.action != Configure {
				return
			}
			var patch map[string]any
			if err := json.Unmarshal(d.Patch, &patch); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{"source": tt.wantSource}, patch["spec"]); diff != "" {
				t.Errorf("spec patch (-want +got):\n%s", diff)
			}
		})
	}
}
