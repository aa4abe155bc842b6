package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"minik8s.io/apiserver/internal/registry"
)

func TestCreateGetAndDuplicate(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	var created corev1.Pod
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("web", map[string]string{"app": "web"}), &created)
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Fatalf("server-set metadata missing: %+v", created.ObjectMeta)
	}
	if created.Namespace != ns || created.Status.Phase != corev1.PodPending {
		t.Fatalf("namespace %q phase %q", created.Namespace, created.Status.Phase)
	}
	if created.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("restartPolicy not defaulted: %q", created.Spec.RestartPolicy)
	}
	var got corev1.Pod
	h.mustDo(http.StatusOK, "GET", "/api/v1/namespaces/"+ns+"/pods/web", "", nil, &got)
	if diff := cmp.Diff(created, got); diff != "" {
		t.Fatalf("get differs from create (-create +get):\n%s", diff)
	}
	var st metav1.Status
	code, _ := h.do("POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("web", nil), &st)
	if code != http.StatusConflict || st.Reason != metav1.StatusReasonAlreadyExists {
		t.Fatalf("duplicate create: %d %+v", code, st)
	}
	if st.Message != `pods "web" already exists` {
		t.Fatalf("message %q", st.Message)
	}
}

func TestCreateRejectsBadInput(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/pods"
	noImage := podManifest("noimage", nil)
	noImage["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = ""
	unknown := podManifest("unknown", nil)
	unknown["spec"].(map[string]any)["bogus"] = true
	cases := []struct {
		name, path, query, ctype string
		body                     any
		code                     int
		reason                   metav1.StatusReason
		field                    string
		msg                      string
	}{
		{name: "missing image", path: base, body: noImage, code: 422, reason: metav1.StatusReasonInvalid, field: "spec.containers[0].image"},
		{name: "bad name", path: base, body: podManifest("Bad_Name", nil), code: 422, reason: metav1.StatusReasonInvalid, field: "metadata.name"},
		{name: "no name", path: base, body: podManifest("", nil), code: 422, reason: metav1.StatusReasonInvalid, field: "metadata.name"},
		{name: "unknown field strict", path: base, query: "?fieldValidation=Strict", body: unknown, code: 400, reason: metav1.StatusReasonBadRequest, msg: `unknown field "spec.bogus"`},
		{name: "undecodable", path: base, body: "{not json", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "bad yaml", path: base, ctype: "application/yaml", body: "a: [", code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "wrong kind", path: base, body: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "x"}}, code: 400, reason: metav1.StatusReasonBadRequest, msg: "kind"},
		{name: "unknown resource", path: "/api/v1/namespaces/" + ns + "/widgets", body: podManifest("w", nil), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "missing namespace", path: "/api/v1/namespaces/nope-" + registry.RandomSuffix() + "/pods", body: podManifest("p", nil), code: 404, reason: metav1.StatusReasonNotFound, msg: "namespaces"},
		{name: "unsupported media type", path: base, ctype: "text/plain", body: "x", code: 415, reason: metav1.StatusReasonUnsupportedMediaType},
		{name: "too large", path: base, body: strings.Repeat(" ", MaxBodyBytes+10), code: 413, reason: metav1.StatusReasonRequestEntityTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st metav1.Status
			code, _ := h.do("POST", tc.path+tc.query, tc.ctype, tc.body, &st)
			if code != tc.code || st.Reason != tc.reason {
				t.Fatalf("got %d %q (%s), want %d %q", code, st.Reason, st.Message, tc.code, tc.reason)
			}
			if tc.field != "" {
				if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != tc.field {
					t.Fatalf("causes %+v, want field %s", st.Details, tc.field)
				}
			}
			if tc.msg != "" && !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("message %q lacks %q", st.Message, tc.msg)
			}
		})
	}
	// Nothing of the rejected requests was stored.
	var list corev1.PodList
	h.mustDo(http.StatusOK, "GET", base, "", nil, &list)
	if len(list.Items) != 0 {
		t.Fatalf("rejected creates left %d pods", len(list.Items))
	}
}

func TestUnknownFieldWarns(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	m := podManifest("warned", nil)
	m["spec"].(map[string]any)["bogus"] = 1
	code, hdr := h.do("POST", "/api/v1/namespaces/"+ns+"/pods?fieldValidation=Warn", "", m, nil)
	if code != http.StatusCreated || !strings.Contains(hdr.Get("Warning"), `unknown field \"spec.bogus\"`) {
		t.Fatalf("code %d warning %q", code, hdr.Get("Warning"))
	}
}

func TestYAMLBodyAndGenerateName(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	var cm corev1.ConfigMap
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "application/yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: cfg-\ndata:\n  k: v\n", &cm)
	if !strings.HasPrefix(cm.Name, "cfg-") || len(cm.Name) != len("cfg-")+5 || cm.Data["k"] != "v" {
		t.Fatalf("got %+v", cm)
	}
	// A long base is cut so that the name fits a DNS label, as Kubernetes does (a ReplicaSet
	// of a long Deployment name gives its pods such a base).
	long := strings.Repeat("a", 70) + "-"
	var cut corev1.ConfigMap
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "application/yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: "+long+"\n", &cut)
	if len(cut.Name) != 63 || !strings.HasPrefix(cut.Name, long[:58]) || cut.GenerateName != long {
		t.Fatalf("generateName of %d characters gave name %q (%d), generateName %q", len(long), cut.Name, len(cut.Name), cut.GenerateName)
	}
}

func TestUpdateConflictAndStatus(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments"
	dep := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "d"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "d"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "echo"}}},
			},
		},
		"status": map[string]any{"replicas": 7},
	}
	var d appsv1.Deployment
	h.mustDo(http.StatusCreated, "POST", path, "", dep, &d)
	if d.Status.Replicas != 0 || d.Generation != 1 || *d.Spec.Replicas != 1 {
		t.Fatalf("create: status %+v generation %d replicas %d", d.Status, d.Generation, *d.Spec.Replicas)
	}
	stale := d.DeepCopy()

	// Spec change bumps generation; status sent to the main endpoint is ignored.
	three := int32(3)
	d.Spec.Replicas = &three
	d.Status.Replicas = 9
	var upd appsv1.Deployment
	h.mustDo(http.StatusOK, "PUT", path+"/d", "", &d, &upd)
	if upd.Generation != 2 || upd.Status.Replicas != 0 || upd.ResourceVersion == d.ResourceVersion {
		t.Fatalf("update: generation %d status %d rv %s", upd.Generation, upd.Status.Replicas, upd.ResourceVersion)
	}

	// The stale copy conflicts.
	var st metav1.Status
	code, _ := h.do("PUT", path+"/d", "", stale, &st)
	if code != http.StatusConflict || st.Reason != metav1.StatusReasonConflict || !strings.Contains(st.Message, "the object has been modified") {
		t.Fatalf("stale update: %d %+v", code, st)
	}

	// The status endpoint changes status only.
	upd.Status.Replicas = 3
	upd.Spec.Paused = true
	var afterStatus appsv1.Deployment
	h.mustDo(http.StatusOK, "PUT", path+"/d/status", "", &upd, &afterStatus)
	if afterStatus.Status.Replicas != 3 || afterStatus.Spec.Paused || afterStatus.Generation != 2 {
		t.Fatalf("status update: status %d paused %v generation %d", afterStatus.Status.Replicas, afterStatus.Spec.Paused, afterStatus.Generation)
	}

	// An update that changes nothing writes nothing.
	var same appsv1.Deployment
	h.mustDo(http.StatusOK, "PUT", path+"/d", "", &afterStatus, &same)
	if same.ResourceVersion != afterStatus.ResourceVersion {
		t.Fatalf("no-op update moved resourceVersion %s -> %s", afterStatus.ResourceVersion, same.ResourceVersion)
	}

	// Scale subresource.
	var sc autoscalingv1.Scale
	h.mustDo(http.StatusOK, "GET", path+"/d/scale", "", nil, &sc)
	if sc.Spec.Replicas != 3 || sc.Status.Selector != "app=d" {
		t.Fatalf("scale %+v", sc)
	}
	sc.Spec.Replicas = 5
	h.mustDo(http.StatusOK, "PUT", path+"/d/scale", "", &sc, &sc)
	var scaled appsv1.Deployment
	h.mustDo(http.StatusOK, "GET", path+"/d", "", nil, &scaled)
	if *scaled.Spec.Replicas != 5 {
		t.Fatalf("replicas after scale %d", *scaled.Spec.Replicas)
	}
	h.mustDo(http.StatusOK, "PATCH", path+"/d/scale", "application/merge-patch+json", `{"spec":{"replicas":2}}`, &sc)
	if sc.Spec.Replicas != 2 {
		t.Fatalf("patched scale %+v", sc)
	}
}

func TestPatchTypes(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	path := "/api/v1/namespaces/" + ns + "/pods/p"
	m := podManifest("p", map[string]string{"a": "1"})
	m["spec"].(map[string]any)["containers"] = []any{
		map[string]any{"name": "one", "image": "echo:1"},
		map[string]any{"name": "two", "image": "echo:1"},
	}
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", m, nil)

	var p corev1.Pod
	h.mustDo(http.StatusOK, "PATCH", path, "application/strategic-merge-patch+json",
		`{"spec":{"containers":[{"name":"two","image":"echo:2"}]}}`, &p)
	if len(p.Spec.Containers) != 2 || p.Spec.Containers[0].Image != "echo:1" || p.Spec.Containers[1].Image != "echo:2" {
		t.Fatalf("strategic merge by name: %+v", p.Spec.Containers)
	}
	p = corev1.Pod{}
	h.mustDo(http.StatusOK, "PATCH", path, "application/merge-patch+json", `{"metadata":{"labels":{"b":"2","a":null}}}`, &p)
	if diff := cmp.Diff(map[string]string{"b": "2"}, p.Labels); diff != "" {
		t.Fatalf("merge patch labels: %s", diff)
	}
	h.mustDo(http.StatusOK, "PATCH", path, "application/json-patch+json", `[{"op":"add","path":"/metadata/labels/c","value":"3"}]`, &p)
	if p.Labels["c"] != "3" {
		t.Fatalf("json patch labels %v", p.Labels)
	}
	var st metav1.Status
	if code, _ := h.do("PATCH", path, "application/json-patch+json", `[{"op":"test","path":"/metadata/labels/c","value":"x"}]`, &st); code != 422 {
		t.Fatalf("failed test op: %d %+v", code, st)
	}
	if code, _ := h.do("PATCH", path, "text/plain", `{}`, &st); code != 415 {
		t.Fatalf("bad patch type: %d", code)
	}
	stale := `{"metadata":{"resourceVersion":"1","labels":{"d":"4"}}}`
	if code, _ := h.do("PATCH", path, "application/merge-patch+json", stale, &st); code != 409 {
		t.Fatalf("patch with stale resourceVersion: %d %+v", code, st)
	}
}

func TestListSelectorsAndPaging(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/pods"
	for i := 0; i < 7; i++ {
		tier := "back"
		if i%2 == 0 {
			tier = "front"
		}
		h.mustDo(http.StatusCreated, "POST", base, "", podManifest(fmt.Sprintf("p%d", i), map[string]string{"tier": tier}), nil)
	}
	names := func(l corev1.PodList) []string {
		var out []string
		for _, p := range l.Items {
			out = append(out, p.Name)
		}
		return out
	}
	var l corev1.PodList
	h.mustDo(http.StatusOK, "GET", base+"?labelSelector=tier%3Dfront", "", nil, &l)
	if diff := cmp.Diff([]string{"p0", "p2", "p4", "p6"}, names(l)); diff != "" {
		t.Fatalf("label selector: %s", diff)
	}
	h.mustDo(http.StatusOK, "GET", base+"?labelSelector=tier+in+(back)", "", nil, &l)
	if diff := cmp.Diff([]string{"p1", "p3", "p5"}, names(l)); diff != "" {
		t.Fatalf("set-based selector: %s", diff)
	}
	h.mustDo(http.StatusOK, "GET", base+"?fieldSelector=metadata.name%3Dp3", "", nil, &l)
	if diff := cmp.Diff([]string{"p3"}, names(l)); diff != "" {
		t.Fatalf("field selector: %s", diff)
	}
	var st metav1.Status
	if code, _ := h.do("GET", base+"?fieldSelector=spec.bogus%3Dx", "", nil, &st); code != 400 {
		t.Fatalf("unsupported field selector: %d", code)
	}
	if code, _ := h.do("GET", base+"?labelSelector=a%3D%3D%3Db", "", nil, &st); code != 400 {
		t.Fatalf("bad label selector: %d", code)
	}
	var all []string
	cont := ""
	pages := 0
	for {
		var page corev1.PodList
		h.mustDo(http.StatusOK, "GET", base+"?limit=3&continue="+cont, "", nil, &page)
		pages++
		all = append(all, names(page)...)
		if page.Continue == "" {
			break
		}
		cont = page.Continue
	}
	if pages != 3 || len(all) != 7 {
		t.Fatalf("paging: %d pages, %v", pages, all)
	}
}

func TestDeleteAndNamespaceLifecycle(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("a", nil), nil)
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/configmaps", "", map[string]any{"metadata": map[string]any{"name": "c"}}, nil)
	h.mustDo(http.StatusOK, "DELETE", "/api/v1/namespaces/"+ns+"/pods/a", "", nil, nil)
	var st metav1.Status
	if code, _ := h.do("GET", "/api/v1/namespaces/"+ns+"/pods/a", "", nil, &st); code != 404 || st.Message != `pods "a" not found` {
		t.Fatalf("after delete: %d %q", code, st.Message)
	}
	if code, _ := h.do("DELETE", "/api/v1/namespaces/default", "", nil, &st); code != 403 {
		t.Fatalf("deleting default: %d", code)
	}
	var nsObj corev1.Namespace
	h.mustDo(http.StatusOK, "DELETE", "/api/v1/namespaces/"+ns, "", nil, &nsObj)
	if nsObj.Status.Phase != corev1.NamespaceTerminating || nsObj.DeletionTimestamp == nil {
		t.Fatalf("namespace after delete: %+v", nsObj.Status)
	}
	h.eventually("namespace is gone", func() bool {
		code, _ := h.do("GET", "/api/v1/namespaces/"+ns, "", nil, nil)
		return code == 404
	})
	var cms corev1.ConfigMapList
	h.mustDo(http.StatusOK, "GET", "/api/v1/namespaces/"+ns+"/configmaps", "", nil, &cms)
	if len(cms.Items) != 0 {
		t.Fatalf("namespace deletion left %d configmaps", len(cms.Items))
	}
}

func TestBindingAndGracefulPodDeletion(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/pods"
	h.mustDo(http.StatusCreated, "POST", base, "", podManifest("b", nil), nil)
	binding := map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": "b"}, "target": map[string]any{"kind": "Node", "name": "node-1"}}
	h.mustDo(http.StatusCreated, "POST", base+"/b/binding", "", binding, nil)
	var p corev1.Pod
	h.mustDo(http.StatusOK, "GET", base+"/b", "", nil, &p)
	if p.Spec.NodeName != "node-1" || len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != corev1.PodScheduled {
		t.Fatalf("bound pod: node %q conditions %+v", p.Spec.NodeName, p.Status.Conditions)
	}
	var st metav1.Status
	if code, _ := h.do("POST", base+"/b/binding", "", binding, &st); code != 409 {
		t.Fatalf("second binding: %d %+v", code, st)
	}
	// A pod on a node is deleted gracefully: marked, then finalized with grace 0.
	h.mustDo(http.StatusOK, "DELETE", base+"/b", "", nil, &p)
	if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("graceful delete: %+v", p.ObjectMeta)
	}
	h.mustDo(http.StatusOK, "GET", base+"/b", "", nil, nil)
	h.mustDo(http.StatusOK, "DELETE", base+"/b?gracePeriodSeconds=0", "", nil, nil)
	if code, _ := h.do("GET", base+"/b", "", nil, nil); code != 404 {
		t.Fatalf("pod still there after grace 0: %d", code)
	}
}

func TestFinalizersHoldDeletion(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", map[string]any{"metadata": map[string]any{"name": "f", "finalizers": []string{"example.com/hold"}}}, nil)
	var cm corev1.ConfigMap
	h.mustDo(http.StatusOK, "DELETE", base+"/f", "", nil, &cm)
	if cm.DeletionTimestamp == nil {
		t.Fatal("deletionTimestamp not set")
	}
	h.mustDo(http.StatusOK, "PATCH", base+"/f", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`, nil)
	if code, _ := h.do("GET", base+"/f", "", nil, nil); code != 404 {
		t.Fatalf("object survived its last finalizer: %d", code)
	}
}

func TestAuthAndDiscovery(t *testing.T) {
	h := newHarness(t)
	req, _ := http.NewRequest("GET", h.url+"/api/v1/namespaces", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("anonymous request: %d", resp.StatusCode)
	}
	var rl metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/api/v1", "", nil, &rl)
	found := map[string]bool{}
	for _, r := range rl.APIResources {
		found[r.Name] = true
	}
	for _, want := range []string{"pods", "pods/status", "pods/binding", "services", "nodes", "namespaces", "events"} {
		if !found[want] {
			t.Errorf("discovery lacks %s", want)
		}
	}
	var groups metav1.APIGroupList
	h.mustDo(http.StatusOK, "GET", "/apis", "", nil, &groups)
	var gnames []string
	for _, g := range groups.Groups {
		gnames = append(gnames, g.Name)
	}
	for _, want := range []string{"apps", "batch", "autoscaling", "networking.k8s.io", "coordination.k8s.io", "serverless.minik8s.io"} {
		if !strings.Contains(strings.Join(gnames, ","), want) {
			t.Errorf("groups %v lack %s", gnames, want)
		}
	}
	var ver map[string]string
	h.mustDo(http.StatusOK, "GET", "/version", "", nil, &ver)
	if ver["major"] != "1" {
		t.Fatalf("version %v", ver)
	}
}

func TestTables(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("t1", nil), nil)
	var tbl metav1.Table
	code, _ := h.do("GET", "/api/v1/namespaces/"+ns+"/pods", "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	if code != 200 || tbl.Kind != "Table" {
		t.Fatalf("table: %d %s", code, tbl.Kind)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	if diff := cmp.Diff([]string{"Name", "Ready", "Status", "Restarts", "Age"}, cols); diff != "" {
		t.Fatalf("pod columns: %s", diff)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "t1" {
		t.Fatalf("rows %+v", tbl.Rows)
	}
	var pm metav1.PartialObjectMetadata
	if err := json.Unmarshal(tbl.Rows[0].Object.Raw, &pm); err != nil || pm.Name != "t1" || pm.Namespace != ns {
		t.Fatalf("row object %s: %v", tbl.Rows[0].Object.Raw, err)
	}
}

func TestSecretStringDataAndProtobufBodies(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	var sec corev1.Secret
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/secrets", "", map[string]any{
		"metadata":   map[string]any{"name": "s"},
		"data":       map[string]any{"a": "YQ==", "b": "Yg=="},
		"stringData": map[string]any{"b": "B", "c": "C"},
	}, &sec)
	if sec.StringData != nil || string(sec.Data["a"]) != "a" || string(sec.Data["b"]) != "B" || string(sec.Data["c"]) != "C" {
		t.Fatalf("secret data %q stringData %q", sec.Data, sec.StringData)
	}

	// The real kubectl sends some writes as protobuf.
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "from-proto"}, Data: map[string]string{"k": "v"}}
	var buf bytes.Buffer
	if err := protobufCodec.Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/configmaps", protobufMediaType, buf.Bytes(), &got)
	if got.Name != "from-proto" || got.Data["k"] != "v" {
		t.Fatalf("protobuf create %+v", got)
	}
	var st metav1.Status
	if code, _ := h.do("POST", "/api/v1/namespaces/"+ns+"/configmaps", protobufMediaType, []byte("k8s\x00garbage"), &st); code != 400 {
		t.Fatalf("bad protobuf: %d %+v", code, st)
	}
}
