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
