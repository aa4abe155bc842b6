package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// widgetCRD defines widgets.<group>, namespaced, served in v1 (stored) and v1beta1, with
// status and scale subresources and printer columns.
func widgetCRD(group string) string {
	return fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.%[1]s"},
 "spec":{"group":"%[1]s","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"],"categories":["all"]},
  "versions":[
   {"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":{"type":"object","properties":{
      "spec":{"type":"object","properties":{"replicas":{"type":"integer","minimum":0,"default":1},"color":{"type":"string","enum":["red","blue"]}},"required":["color"]},
      "status":{"type":"object","properties":{"replicas":{"type":"integer"},"selector":{"type":"string"}}}}}},
    "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},
    "additionalPrinterColumns":[{"name":"Color","type":"string","jsonPath":".spec.color"},{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}]},
   {"name":"v1beta1","served":true,"storage":false,"deprecated":true,
    "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`, group)
}

func TestCustomResourceDefinitionServesItsResource(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	group := "crd-serve.example.com"
	base := "/apis/" + group + "/v1/namespaces/" + ns + "/widgets"

	// Not served before its definition.
	if code, _ := h.do("GET", base, "", nil, nil); code != http.StatusNotFound {
		t.Fatalf("list before the definition: %d, want 404", code)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	h.mustDo(http.StatusCreated, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", widgetCRD(group), &crd)
	if !slices.Contains(crd.Finalizers, "customresourcecleanup.apiextensions.k8s.io") {
		t.Errorf("finalizers %v, want the cleanup finalizer", crd.Finalizers)
	}
	conds := map[apiextensionsv1.CustomResourceDefinitionConditionType]apiextensionsv1.ConditionStatus{}
	for _, c := range crd.Status.Conditions {
		conds[c.Type] = c.Status
	}
	if conds[apiextensionsv1.Established] != apiextensionsv1.ConditionTrue || conds[apiextensionsv1.NamesAccepted] != apiextensionsv1.ConditionTrue {
		t.Errorf("conditions %v, want Established and NamesAccepted true", crd.Status.Conditions)
	}
	if crd.Status.AcceptedNames.Plural != "widgets" || crd.Status.AcceptedNames.ListKind != "WidgetList" || !slices.Equal(crd.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("accepted names %+v, stored versions %v", crd.Status.AcceptedNames, crd.Status.StoredVersions)
	}

	t.Run("discovery", func(t *testing.T) {
		var groups metav1.APIGroupList
		h.mustDo(http.StatusOK, "GET", "/apis", "", nil, &groups)
		var found *metav1.APIGroup
		for i := range groups.Groups {
			if groups.Groups[i].Name == group {
				found = &groups.Groups[i]
			}
		}
		if found == nil || found.PreferredVersion.Version != "v1" || len(found.Versions) != 2 {
			t.Fatalf("group %s in /apis: %+v", group, found)
		}
		var list metav1.APIResourceList
		h.mustDo(http.StatusOK, "GET", "/apis/"+group+"/v1", "", nil, &list)
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
			if r.Name == "widgets" && (r.Kind != "Widget" || !r.Namespaced || !slices.Equal(r.ShortNames, []string{"wd"}) || !slices.Equal(r.Categories, []string{"all"})) {
				t.Errorf("widgets in discovery: %+v", r)
			}
		}
		if slices.Sort(names); !slices.Equal(names, []string{"widgets", "widgets/scale", "widgets/status"}) {
			t.Errorf("resources of %s/v1: %v", group, names)
		}
	})

	// A watch started now sees the create.
	events := h.openWatch(base + "?watch=true")

	var w unstructured.Unstructured
	h.mustDo(http.StatusCreated, "POST", base, "application/json",
		`{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w1","labels":{"tier":"front"}},"spec":{"color":"red","replicas":2},"status":{"replicas":9}}`, &w)
	if _, found, _ := unstructured.NestedFieldNoCopy(w.Object, "status"); found {
		t.Errorf("status set on create through the main endpoint: %v", w.Object["status"])
	}
	if w.GetUID() == "" || w.GetResourceVersion() == "" || w.GetGeneration() != 1 {
		t.Errorf("metadata not filled in: %v", w.Object["metadata"])
	}
	if ev := next(t, events, true); ev.Type != "ADDED" || !strings.Contains(string(ev.Object), `"name":"w1"`) {
		t.Errorf("watch event: %s %s", ev.Type, ev.Object)
	}

	t.Run("other version reads the same object", func(t *testing.T) {
		var got unstructured.Unstructured
		code, header := h.do("GET", "/apis/"+group+"/v1beta1/namespaces/"+ns+"/widgets/w1", "", nil, &got)
		if code != http.StatusOK || got.GetAPIVersion() != group+"/v1beta1" || got.GetUID() != w.GetUID() {
			t.Errorf("through v1beta1: %d, apiVersion %q uid %q", code, got.GetAPIVersion(), got.GetUID())
		}
		if want := `299 - "` + group + `/v1beta1 Widget is deprecated"`; header.Get("Warning") != want {
			t.Errorf("Warning %q, want %q", header.Get("Warning"), want)
		}
		if header := func() http.Header { _, h := h.do("GET", base+"/w1", "", nil, nil); return h }(); header.Get("Warning") != "" {
			t.Errorf("a served version that is not deprecated warns: %q", header.Get("Warning"))
		}
	})

	t.Run("status subresource", func(t *testing.T) {
		cur := w.DeepCopy()
		_ = unstructured.SetNestedField(cur.Object, int64(2), "status", "replicas")
		_ = unstructured.SetNestedField(cur.Object, "tier=front", "status", "selector")
		_ = unstructured.SetNestedField(cur.Object, "blue", "spec", "color")
		var got unstructured.Unstructured
		h.mustDo(http.StatusOK, "PUT", base+"/w1/status", "application/json", cur.Object, &got)
		color, _, _ := unstructured.NestedString(got.Object, "spec", "color")
		replicas, _, _ := unstructured.NestedInt64(got.Object, "status", "replicas")
		if color != "red" || replicas != 2 || got.GetGeneration() != 1 {
			t.Errorf("after a status write: color %q (want red), status.replicas %d (want 2), generation %d (want 1)", color, replicas, got.GetGeneration())
		}
		// A spec change through the main endpoint bumps generation and keeps status.
		h.mustDo(http.StatusOK, "PATCH", base+"/w1", "application/merge-patch+json", `{"spec":{"color":"blue"},"status":{"replicas":7}}`, &got)
		replicas, _, _ = unstructured.NestedInt64(got.Object, "status", "replicas")
		if got.GetGeneration() != 2 || replicas != 2 {
			t.Errorf("after a spec patch: generation %d (want 2), status.replicas %d (want 2)", got.GetGeneration(), replicas)
		}
	})

	t.Run("scale subresource", func(t *testing.T) {
		var sc autoscalingv1.Scale
		h.mustDo(http.StatusOK, "GET", base+"/w1/scale", "", nil, &sc)
		if sc.Spec.Replicas != 2 || sc.Status.Replicas != 2 || sc.Status.Selector != "tier=front" {
			t.Errorf("scale: %+v", sc)
		}
		h.mustDo(http.StatusOK, "PATCH", base+"/w1/scale", "application/merge-patch+json", `{"spec":{"replicas":5}}`, &sc)
		var got unstructured.Unstructured
		h.mustDo(http.StatusOK, "GET", base+"/w1", "", nil, &got)
		if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 5 || sc.Spec.Replicas != 5 {
			t.Errorf("after scaling to 5: spec.replicas %d, scale %d", n, sc.Spec.Replicas)
		}
	})

	t.Run("list with selectors and as a table", func(t *testing.T) {
		h.mustDo(http.StatusCreated, "POST", base, "application/json", `{"apiVersion":"`+group+`/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"color":"blue"}}`, nil)
		var list unstructured.UnstructuredList
		h.mustDo(http.StatusOK, "GET", base+"?labelSelector=tier%3Dfront", "", nil, &list)
		if len(list.Items) != 1 || list.Items[0].GetName() != "w1" || list.GetKind() != "WidgetList" {
			t.Errorf("label-selected list: kind %q, %d items", list.GetKind(), len(list.Items))
		}
		h.mustDo(http.StatusOK, "GET", base+"?fieldSelector=metadata.name%3Dw2", "", nil, &list)
		if len(list.Items) != 1 || list.Items[0].GetName() != "w2" {
			t.Errorf("field-selected list: %d items", len(list.Items))
		}
		var table metav1.Table
		if code, _ := h.do("GET", base, "", nil, &table, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"); code != http.StatusOK {
			t.Fatalf("table: %d", code)
		}
		var cols []string
		for _, c := range table.ColumnDefinitions {
			cols = append(cols, c.Name)
		}
		if !slices.Contains(cols, "Color") || !slices.Contains(cols, "Replicas") || len(table.Rows) != 2 {
			t.Errorf("table columns %v, %d rows", cols, len(table.Rows))
		}
	})

	t.Run("unknown fields under each field validation directive", func(t *testing.T) {
		body := func(name string) string {
			return `{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":{"color":"red","colour":"blue"}}`
		}
		var status metav1.Status
		code, _ := h.do("POST", base+"?fieldValidation=Strict", "application/json", body("strict"), &status)
		if code != http.StatusBadRequest || status.Message != `strict decoding error: unknown field "spec.colour"` {
			t.Errorf("Strict: %d %q, want 400 naming spec.colour", code, status.Message)
		}
		var got unstructured.Unstructured
		code, header := h.do("POST", base, "application/json", body("warned"), &got)
		if _, found, _ := unstructured.NestedString(got.Object, "spec", "colour"); code != http.StatusCreated || found ||
			header.Get("Warning") != `299 - "unknown field \"spec.colour\""` {
			t.Errorf("Warn (the default): %d, Warning %q, colour kept %v", code, header.Get("Warning"), found)
		}
		code, header = h.do("POST", base+"?fieldValidation=Ignore", "application/json", body("ignored"), nil)
		if code != http.StatusCreated || header.Get("Warning") != "" {
			t.Errorf("Ignore: %d, Warning %q", code, header.Get("Warning"))
		}
	})

	t.Run("duplicate fields and a missing kind", func(t *testing.T) {
		var status metav1.Status
		dup := `{"apiVersion":"` + group + `/v1","kind":"Widget","metadata":{"name":"dup"},"spec":{"color":"red","color":"blue"}}`
		code, _ := h.do("POST", base+"?fieldValidation=Strict", "application/json", dup, &status)
		if code != http.StatusBadRequest || status.Message != `strict decoding error: duplicate field "spec.color"` {
			t.Errorf("Strict with a duplicate field: %d %q, want 400 naming spec.color", code, status.Message)
		}
		var got unstructured.Unstructured
		code, header := h.do("POST", base, "application/json", dup, &got)
		if color, _, _ := unstructured.NestedString(got.Object, "spec", "color"); code != http.StatusCreated || color != "blue" ||
			header.Get("Warning") != `299 - "duplicate field \"spec.color\""` {
			t.Errorf("Warn with a duplicate field: %d, Warning %q, color %q (want the last, blue)", code, header.Get("Warning"), color)
		}
		status = metav1.Status{}
		code, _ = h.do("POST", base, "application/json", `{"apiVersion":"`+group+`/v1","metadata":{"name":"nokind"},"spec":{"color":"red"}}`, &status)
		if code != http.StatusBadRequest || !strings.Contains(status.Message, "Object 'Kind' is missing") {
			t.Errorf("no kind: %d %q, want 400 saying the kind is missing", code, status.Message)
		}
		for _, body := range []string{`[]`, `null`, `"widget"`} {
			if code, _ = h.do("POST", base, "application/json", body, nil); code != http.StatusBadRequest {
				t.Errorf("body %s: %d, want 400", body, code)
			}
		}
	})

	t.Run("deleting the definition deletes its objects, then stops serving", func(t *testing.T) {
		h.mustDo(http.StatusOK, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets."+group, "", nil, nil)
		h.eventually("the definition is gone", func() bool {
			code, _ := h.do("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets."+group, "", nil, nil)
			return code == http.StatusNotFound
		})
		if code, _ := h.do("GET", base, "", nil, nil); code != http.StatusNotFound {
			t.Errorf("list after the definition went: %d, want 404", code)
		}
		// Recreated, it serves no leftover objects.
		h.mustDo(http.StatusCreated, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", widgetCRD(group), nil)
		var list unstructured.UnstructuredList
		h.mustDo(http.StatusOK, "GET", base, "", nil, &list)
		if len(list.Items) != 0 {
			t.Errorf("%d objects survived their definition", len(list.Items))
		}
		h.mustDo(http.StatusOK, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets."+group, "", nil, nil)
	})
}

func TestCustomResourceDefinitionNameConflicts(t *testing.T) {
	h := newHarness(t)
	group := "crd-conflict.example.com"
	h.mustDo(http.StatusCreated, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", widgetCRD(group), nil)
	defer h.do("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets."+group, "", nil, nil)
	// Another definition in the group that takes the short name and kind of widgets.
	other := strings.NewReplacer(`"widgets.`, `"gadgets.`, `"plural":"widgets","singular":"widget"`, `"plural":"gadgets","singular":"gadget"`).Replace(widgetCRD(group))
	var status metav1.Status
	h.mustDo(http.StatusUnprocessableEntity, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", other, &status)
	var fields []string
	for _, c := range status.Details.Causes {
		fields = append(fields, c.Field)
	}
	if !slices.Contains(fields, "spec.names.shortNames[0]") || !slices.Contains(fields, "spec.names.kind") {
		t.Errorf("causes %v, want spec.names.shortNames[0] and spec.names.kind", fields)
	}
}
