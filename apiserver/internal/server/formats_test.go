package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// bodyFormat is one wire format a client may send or ask for.
type wireFormat struct {
	name, mediaType string
}

var (
	formatJSON     = wireFormat{"json", "application/json"}
	formatYAML     = wireFormat{"yaml", "application/yaml"}
	formatProtobuf = wireFormat{"protobuf", "application/vnd.kubernetes.protobuf"}
	wireFormats    = []wireFormat{formatJSON, formatYAML, formatProtobuf}
)

func (f wireFormat) encode(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	switch f {
	case formatYAML:
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return data
	case formatProtobuf:
		var buf bytes.Buffer
		if err := protobufCodec.Encode(obj, &buf); err != nil {
			t.Fatalf("protobuf encode %T: %v", obj, err)
		}
		return buf.Bytes()
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// decodeAs decodes an answer by its Content-Type.
func decodeAs(t *testing.T, ctype string, data []byte, into runtime.Object) {
	t.Helper()
	var err error
	switch mediaType(ctype) {
	case formatProtobuf.mediaType:
		_, _, err = protobufCodec.Decode(data, nil, into)
	case formatYAML.mediaType:
		err = yaml.Unmarshal(data, into)
	case formatJSON.mediaType:
		err = json.Unmarshal(data, into)
	default:
		t.Fatalf("answer in %q", ctype)
	}
	if err != nil {
		t.Fatalf("decode %s answer %q: %v", ctype, truncate(string(data)), err)
	}
}

// raw sends a request with a body in ctype, asking for accept, and returns the answer.
func (h *harness) raw(method, path, ctype, accept string, body []byte) (int, string, []byte) {
	h.t.Helper()
	var headers []string
	if ctype != "" {
		headers = append(headers, "Content-Type", ctype)
	}
	if accept != "" {
		headers = append(headers, "Accept", accept)
	}
	resp, data := h.send(method, path, body, headers...)
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

// kindCase is a resource with an object to write and what to change on update.
type kindCase struct {
	name, base string
	newObj     func(name string) runtime.Object
	newEmpty   func() runtime.Object
	// change alters an object read back (for update) and check says the change stuck.
	change  func(runtime.Object)
	changed func(runtime.Object) bool
	// status sets a status field and statusSet says it stuck; nil when the kind has none.
	status    func(runtime.Object)
	statusSet func(runtime.Object) bool
	hasProto  bool
}

func kindCases(ns string) []kindCase {
	replicas := int32(1)
	return []kindCase{
		{
			name: "configmaps", base: "/api/v1/namespaces/" + ns + "/configmaps", hasProto: true,
			newObj: func(name string) runtime.Object {
				return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}
			},
			newEmpty: func() runtime.Object { return &corev1.ConfigMap{} },
			change:   func(o runtime.Object) { o.(*corev1.ConfigMap).Data["k"] = "changed" },
			changed:  func(o runtime.Object) bool { return o.(*corev1.ConfigMap).Data["k"] == "changed" },
		},
		{
			name: "deployments", base: "/apis/apps/v1/namespaces/" + ns + "/deployments", hasProto: true,
			newObj: func(name string) runtime.Object {
				labels := map[string]string{"app": name}
				return &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
						Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}}}}}
			},
			newEmpty: func() runtime.Object { return &appsv1.Deployment{} },
			change: func(o runtime.Object) {
				o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image = "minik8s/echo:2.0"
			},
			changed: func(o runtime.Object) bool {
				return o.(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Image == "minik8s/echo:2.0"
			},
			status:    func(o runtime.Object) { o.(*appsv1.Deployment).Status.ObservedGeneration = 7 },
			statusSet: func(o runtime.Object) bool { return o.(*appsv1.Deployment).Status.ObservedGeneration == 7 },
		},
		{
			name: "functions", base: "/apis/serverless.minik8s.io/v1/namespaces/" + ns + "/functions",
			newObj: func(name string) runtime.Object {
				return &serverlessv1.Function{TypeMeta: metav1.TypeMeta{APIVersion: "serverless.minik8s.io/v1", Kind: "Function"},
					ObjectMeta: metav1.ObjectMeta{Name: name},
					Spec:       serverlessv1.FunctionSpec{Handler: "main.handle", Source: map[string]string{"main.py": "def handle(e):\n    return e\n"}}}
			},
			newEmpty:  func() runtime.Object { return &serverlessv1.Function{} },
			change:    func(o runtime.Object) { o.(*serverlessv1.Function).Spec.Requirements = "requests" },
			changed:   func(o runtime.Object) bool { return o.(*serverlessv1.Function).Spec.Requirements == "requests" },
			status:    func(o runtime.Object) { o.(*serverlessv1.Function).Status.ObservedGeneration = 7 },
			statusSet: func(o runtime.Object) bool { return o.(*serverlessv1.Function).Status.ObservedGeneration == 7 },
		},
	}
}

// Every verb with a body takes JSON, YAML and (for k8s.io/api kinds) protobuf; a kind with no
// protobuf form refuses protobuf with 415.
func TestEveryVerbInEveryBodyFormat(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	for _, kc := range kindCases(ns) {
		for _, f := range wireFormats {
			t.Run(kc.name+"/"+f.name, func(t *testing.T) {
				name := "obj-" + f.name
				accept := formatJSON.mediaType
				if !kc.hasProto && f == formatProtobuf {
					// A kind with no protobuf form: the body cannot even be written here,
					// so send a core object's protobuf; the media type alone is refused.
					code, _, data := h.raw("POST", kc.base, f.mediaType, accept, formatProtobuf.encode(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}))
					var st metav1.Status
					_ = json.Unmarshal(data, &st)
					if code != http.StatusUnsupportedMediaType || st.Reason != metav1.StatusReasonUnsupportedMediaType || !strings.Contains(st.Message, "application/json") {
						t.Fatalf("protobuf body for %s: %d %s", kc.name, code, data)
					}
					return
				}
				// create
				code, ctype, data := h.raw("POST", kc.base, f.mediaType, accept, f.encode(t, kc.newObj(name)))
				if code != http.StatusCreated {
					t.Fatalf("create: %d %s", code, data)
				}
				obj := kc.newEmpty()
				decodeAs(t, ctype, data, obj)
				// update
				kc.change(obj)
				code, ctype, data = h.raw("PUT", kc.base+"/"+name, f.mediaType, accept, f.encode(t, withKind(obj, kc.newObj(name))))
				if code != http.StatusOK {
					t.Fatalf("update: %d %s", code, data)
				}
				obj = kc.newEmpty()
				decodeAs(t, ctype, data, obj)
				if !kc.changed(obj) {
					t.Fatalf("update did not stick: %s", data)
				}
				// status
				if kc.status != nil {
					kc.status(obj)
					code, ctype, data = h.raw("PUT", kc.base+"/"+name+"/status", f.mediaType, accept, f.encode(t, withKind(obj, kc.newObj(name))))
					if code != http.StatusOK {
						t.Fatalf("status update: %d %s", code, data)
					}
					obj = kc.newEmpty()
					decodeAs(t, ctype, data, obj)
					if !kc.statusSet(obj) {
						t.Fatalf("status update did not stick: %s", data)
					}
				}
				// delete with DeleteOptions in the body
				opts := &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}, DryRun: []string{"All"}}
				optsBody := f.encode(t, opts)
				code, _, data = h.raw("DELETE", kc.base+"/"+name, f.mediaType, accept, optsBody)
				if code != http.StatusOK {
					t.Fatalf("dry-run delete: %d %s", code, data)
				}
				if code, _, _ := h.raw("GET", kc.base+"/"+name, "", accept, nil); code != http.StatusOK {
					t.Fatalf("a dry-run delete deleted: %d", code)
				}
				grace := int64(0)
				opts = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}, GracePeriodSeconds: &grace}
				if code, _, data = h.raw("DELETE", kc.base+"/"+name, f.mediaType, accept, f.encode(t, opts)); code != http.StatusOK {
					t.Fatalf("delete: %d %s", code, data)
				}
				if code, _, _ := h.raw("GET", kc.base+"/"+name, "", accept, nil); code != http.StatusNotFound {
					t.Fatalf("after delete: %d", code)
				}
			})
		}
	}
}

// withKind sets the type meta of obj from a fresh object of the kind (reads drop it in
// protobuf).
func withKind(obj, like runtime.Object) runtime.Object {
	obj.GetObjectKind().SetGroupVersionKind(like.GetObjectKind().GroupVersionKind())
	return obj
}

// Answers come in the first acceptable entry of Accept: protobuf only for kinds that have it,
// 406 when nothing listed is acceptable.
func TestAnswerFormats(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	for _, kc := range kindCases(ns) {
		h.mustDo(http.StatusCreated, "POST", kc.base, "", kc.newObj("answer"), nil)
		cases := []struct {
			accept, want string
			code         int
		}{
			{"", formatJSON.mediaType, 200},
			{"*/*", formatJSON.mediaType, 200},
			{formatYAML.mediaType, formatYAML.mediaType, 200},
			{"application/vnd.kubernetes.protobuf,application/json", map[bool]string{true: formatProtobuf.mediaType, false: formatJSON.mediaType}[kc.hasProto], 200},
			{"application/vnd.kubernetes.protobuf", formatProtobuf.mediaType, map[bool]int{true: 200, false: 406}[kc.hasProto]},
			{"text/html", "", 406},
		}
		for _, tc := range cases {
			for _, path := range []string{kc.base + "/answer", kc.base} {
				t.Run(fmt.Sprintf("%s %q %s", kc.name, tc.accept, path[len(kc.base):]), func(t *testing.T) {
					code, ctype, data := h.raw("GET", path, "", tc.accept, nil)
					if code != tc.code {
						t.Fatalf("%d %s, want %d", code, truncate(string(data)), tc.code)
					}
					if code != 200 {
						var st metav1.Status
						if err := json.Unmarshal(data, &st); err != nil || st.Reason != metav1.StatusReasonNotAcceptable {
							t.Fatalf("not acceptable answered %s", data)
						}
						return
					}
					if mediaType(ctype) != tc.want {
						t.Fatalf("answered in %q, want %q", ctype, tc.want)
					}
					obj := kc.newEmpty()
					if path == kc.base {
						obj = listOf(t, kc.name)
					}
					decodeAs(t, ctype, data, obj)
					m, err := metaOfOrList(obj)
					if err != nil || m == "" {
						t.Fatalf("decoded %T without a resourceVersion: %v", obj, err)
					}
				})
			}
		}
	}
}

func listOf(t *testing.T, plural string) runtime.Object {
	t.Helper()
	switch plural {
	case "configmaps":
		return &corev1.ConfigMapList{}
	case "deployments":
		return &appsv1.DeploymentList{}
	case "functions":
		return &serverlessv1.FunctionList{}
	}
	t.Fatalf("no list for %s", plural)
	return nil
}

// metaOfOrList returns the resourceVersion of an object or list.
func metaOfOrList(obj runtime.Object) (string, error) {
	if l, ok := obj.(metav1.ListInterface); ok {
		return l.GetResourceVersion(), nil
	}
	m, err := metaOf(obj)
	if err != nil {
		return "", err
	}
	return m.GetResourceVersion(), nil
}

// Subresources with bodies (binding, eviction, scale) take every format too.
func TestSubresourceBodiesInEveryFormat(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	pods := "/api/v1/namespaces/" + ns + "/pods"
	deploy := kindCases(ns)[1]
	for _, f := range wireFormats {
		t.Run(f.name, func(t *testing.T) {
			pod := "p-" + f.name
			h.mustDo(http.StatusCreated, "POST", pods, "", podManifest(pod, nil), nil)
			binding := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
				ObjectMeta: metav1.ObjectMeta{Name: pod}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
			if code, _, data := h.raw("POST", pods+"/"+pod+"/binding", f.mediaType, "", f.encode(t, binding)); code != http.StatusCreated {
				t.Fatalf("binding: %d %s", code, data)
			}
			var bound corev1.Pod
			h.mustDo(http.StatusOK, "GET", pods+"/"+pod, "", nil, &bound)
			if bound.Spec.NodeName != "node-a" {
				t.Fatalf("bound to %q", bound.Spec.NodeName)
			}
			grace := int64(0)
			eviction := &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
				ObjectMeta: metav1.ObjectMeta{Name: pod}, DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}}
			if code, _, data := h.raw("POST", pods+"/"+pod+"/eviction", f.mediaType, "", f.encode(t, eviction)); code != http.StatusCreated {
				t.Fatalf("eviction: %d %s", code, data)
			}
			if code, _, _ := h.raw("GET", pods+"/"+pod, "", "", nil); code != http.StatusNotFound {
				t.Fatalf("evicted pod still there: %d", code)
			}

			name := "scaled-" + f.name
			h.mustDo(http.StatusCreated, "POST", deploy.base, "", deploy.newObj(name), nil)
			scale := &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
				ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}
			code, ctype, data := h.raw("PUT", deploy.base+"/"+name+"/scale", f.mediaType, f.mediaType, f.encode(t, scale))
			if code != http.StatusOK {
				t.Fatalf("scale: %d %s", code, data)
			}
			var got autoscalingv1.Scale
			decodeAs(t, ctype, data, &got)
			if got.Spec.Replicas != 4 || mediaType(ctype) != f.mediaType {
				t.Fatalf("scale answered %d replicas in %s", got.Spec.Replicas, ctype)
			}
		})
	}
}

// A protobuf watch is a stream of length-prefixed WatchEvents whose objects are enveloped.
func TestProtobufWatch(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("before", nil), nil)
	req, err := http.NewRequestWithContext(t.Context(), "GET", h.url+base+"?"+watchList, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", formatProtobuf.mediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("content type %q", ct)
	}
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("after", nil), nil)
	readEvent := func() (string, *corev1.ConfigMap) {
		t.Helper()
		var size [4]byte
		if _, err := io.ReadFull(resp.Body, size[:]); err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(resp.Body, frame); err != nil {
			t.Fatal(err)
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(frame); err != nil {
			t.Fatalf("frame is not a bare WatchEvent: %v", err)
		}
		var cm corev1.ConfigMap
		if _, _, err := protobufCodec.Decode(ev.Object.Raw, nil, &cm); err != nil {
			t.Fatalf("event object: %v", err)
		}
		return ev.Type, &cm
	}
	var got []string
	for len(got) < 3 {
		typ, cm := readEvent()
		got = append(got, typ+" "+cm.Name+map[bool]string{true: " end"}[cm.Annotations[metav1.InitialEventsAnnotationKey] == "true"])
	}
	want := []string{"ADDED before", "BOOKMARK  end", "ADDED after"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", got, want)
	}
}

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
