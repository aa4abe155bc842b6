package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Metadata-only clients (client-go's metadata informers) get PartialObjectMetadata for gets,
// lists and every watch event, bookmarks included.
func TestPartialObjectMetadata(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("meta", map[string]string{"k": "v"}), nil)
	const accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	code, _, data := h.raw("GET", base+"/meta", "", accept, nil)
	var one metav1.PartialObjectMetadata
	if err := json.Unmarshal(data, &one); code != 200 || err != nil || one.Kind != "PartialObjectMetadata" || one.Labels["k"] != "v" {
		t.Fatalf("get: %d %s", code, data)
	}
	if strings.Contains(string(data), `"data"`) {
		t.Fatalf("metadata view carries the object's data: %s", data)
	}
	code, _, data = h.raw("GET", base, "", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", nil)
	var list metav1.PartialObjectMetadataList
	if err := json.Unmarshal(data, &list); code != 200 || err != nil || list.Kind != "PartialObjectMetadataList" || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %d %s", code, data)
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", h.url+base+"?"+watchList, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for _, want := range []string{"ADDED", "BOOKMARK"} {
		var ev struct {
			Type   string                       `json:"type"`
			Object metav1.PartialObjectMetadata `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != want || ev.Object.Kind != "PartialObjectMetadata" {
			t.Fatalf("event %s of kind %q, want %s of PartialObjectMetadata", ev.Type, ev.Object.Kind, want)
		}
	}
}

// The answer's form is settled before anything is done: a write whose answer the client cannot
// take is refused with 406 and changes nothing.
func TestUnacceptableAnswerChangesNothing(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("kept", nil), nil)
	body, err := json.Marshal(configMap("refused", nil))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ method, path, accept string }{
		{"POST", base, "text/html"},
		{"PUT", base + "/kept", "text/html"},
		{"PATCH", base + "/kept", "text/html"},
		{"DELETE", base + "/kept", "text/html"},
		{"DELETE", base, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path[len(base):], func(t *testing.T) {
			var b []byte
			ctype := "application/json"
			switch tc.method {
			case "POST":
				b = body
			case "PUT":
				b, _ = json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "kept"}, "data": map[string]any{"changed": "yes"}})
			case "PATCH":
				b, ctype = []byte(`{"data":{"changed":"yes"}}`), "application/merge-patch+json"
			}
			if code, _, data := h.raw(tc.method, tc.path, ctype, tc.accept, b); code != http.StatusNotAcceptable {
				t.Fatalf("%d %s, want 406", code, data)
			}
		})
	}
	var list corev1.ConfigMapList
	h.mustDo(http.StatusOK, "GET", base, "", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "kept" || list.Items[0].Data["changed"] != "" {
		t.Fatalf("a refused request changed something: %+v", list.Items)
	}
}

// Subresources that act honour dryRun as their endpoints do.
func TestDryRunOnSubresources(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	pods := "/api/v1/namespaces/" + ns + "/pods"
	h.mustDo(http.StatusCreated, "POST", pods, "", podManifest("p", nil), nil)
	h.mustDo(http.StatusCreated, "POST", pods+"/p/binding?dryRun=All", "", map[string]any{"apiVersion": "v1", "kind": "Binding",
		"metadata": map[string]any{"name": "p"}, "target": map[string]any{"kind": "Node", "name": "n1"}}, nil)
	var pod corev1.Pod
	h.mustDo(http.StatusOK, "GET", pods+"/p", "", nil, &pod)
	if pod.Spec.NodeName != "" {
		t.Fatalf("a dry-run binding bound the pod to %s", pod.Spec.NodeName)
	}
	h.mustDo(http.StatusCreated, "POST", pods+"/p/eviction?dryRun=All", "", map[string]any{"apiVersion": "policy/v1", "kind": "Eviction",
		"metadata": map[string]any{"name": "p"}}, nil)
	h.mustDo(http.StatusOK, "GET", pods+"/p", "", nil, nil)

	deploy := kindCases(ns)[1]
	h.mustDo(http.StatusCreated, "POST", deploy.base, "", deploy.newObj("d"), nil)
	var sc autoscalingv1.Scale
	h.mustDo(http.StatusOK, "PATCH", deploy.base+"/d/scale?dryRun=All", "application/merge-patch+json", `{"spec":{"replicas":0}}`, &sc)
	if sc.Spec.Replicas != 0 {
		t.Fatalf("the dry run answered %d replicas, want what it would have made (0)", sc.Spec.Replicas)
	}
	h.mustDo(http.StatusOK, "GET", deploy.base+"/d/scale", "", nil, &sc)
	if sc.Spec.Replicas != 1 {
		t.Fatalf("a dry-run scale stored %d replicas", sc.Spec.Replicas)
	}
	var st metav1.Status
	if code, _ := h.do("PATCH", deploy.base+"/d/scale?fieldValidation=Bogus", "application/merge-patch+json", `{"spec":{"replicas":2}}`, &st); code != 422 {
		t.Fatalf("a bad fieldValidation on scale: %d %+v", code, st)
	}
}

// Requests the server cannot answer as asked are 4xx, never a 5xx or an empty stream.
func TestAnswerEdgeCases(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("c", nil), nil)
	cases := []struct {
		name, query, accept string
		code                int
	}{
		{"a YAML watch", "?watch=true", "application/yaml", 406},
		{"a list as PartialObjectMetadata", "", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 406},
		{"an unknown includeObject", "?includeObject=Bogus", "application/json;as=Table;g=meta.k8s.io;v=v1", 400},
		{"continue with a resourceVersion", "?limit=1&continue=abc&resourceVersion=5", "", 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, data := h.raw("GET", base+tc.query, "", tc.accept, nil); code != tc.code {
				t.Fatalf("%d %s, want %d", code, data, tc.code)
			}
		})
	}
	// timeoutSeconds=0 means the server's default, not a watch that has timed out already.
	w := h.openWatch(base + "?watch=true&timeoutSeconds=0")
	if ev := next(t, w, true); ev.Type != "ADDED" {
		t.Fatalf("first event %s", ev.Type)
	}
}
