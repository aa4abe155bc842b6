package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// widgetDiscovery is the discovery of a server with a CustomResourceDefinition of widgets
// (example.com, v1 and v1beta1, namespaced, in category all, with status and scale) and, when
// withGadgets, one of cluster-scoped gadgets.
func widgetDiscovery(withGadgets bool) []*metav1.APIResourceList {
	verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	widgets := metav1.APIResource{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget",
		ShortNames: []string{"wd"}, Categories: []string{"all"}, Verbs: verbs}
	v1 := &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		widgets,
		{Name: "widgets/status", Namespaced: true, Kind: "Widget", Verbs: metav1.Verbs{"get", "patch", "update"}},
		{Name: "widgets/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: metav1.Verbs{"get", "patch", "update"}},
	}}
	if withGadgets {
		v1.APIResources = append(v1.APIResources, metav1.APIResource{Name: "gadgets", SingularName: "gadget", Kind: "Gadget", Verbs: verbs})
	}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Categories: []string{"all"}, Verbs: verbs},
		}},
		v1,
		{GroupVersion: "example.com/v1beta1", APIResources: []metav1.APIResource{widgets}},
	}
}

// serveDiscovery adds discovery's routes to f: /api/v1, /apis and each group version of
// lists (the core group's first), from lists() at each request.
func serveDiscovery(f *fakeAPI, lists func() []*metav1.APIResourceList) {
	all := lists()
	for _, l := range all {
		path := "/apis/" + l.GroupVersion
		if l.GroupVersion == "v1" {
			path = "/api/v1"
		}
		gv := l.GroupVersion
		f.routes["GET "+path] = func(w http.ResponseWriter, _ *http.Request) {
			for _, l := range lists() {
				if l.GroupVersion == gv {
					w.Header().Set("Content-Type", "application/json")
					json.NewEncoder(w).Encode(l)
					return
				}
			}
			writeStatus(w, apierror.NotFound("", "groupversions", gv))
		}
	}
	f.routes["GET /apis"] = func(w http.ResponseWriter, _ *http.Request) {
		groups := &metav1.APIGroupList{}
		for _, l := range lists() {
			group, version, ok := strings.Cut(l.GroupVersion, "/")
			if !ok {
				continue
			}
			gvd := metav1.GroupVersionForDiscovery{GroupVersion: l.GroupVersion, Version: version}
			if n := len(groups.Groups); n > 0 && groups.Groups[n-1].Name == group {
				groups.Groups[n-1].Versions = append(groups.Groups[n-1].Versions, gvd)
				continue
			}
			groups.Groups = append(groups.Groups, metav1.APIGroup{Name: group, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(groups)
	}
}

// isDiscovery tells discovery's requests from the others.
func isDiscovery(call string) bool {
	path := strings.TrimPrefix(call, "GET ")
	return path == "/api/v1" || path == "/apis" || strings.Count(path, "/") == 3 && strings.HasPrefix(path, "/apis/")
}

func withoutDiscovery(calls []string) []string {
	var out []string
	for _, c := range calls {
		if !isDiscovery(c) {
			out = append(out, c)
		}
	}
	return out
}

const widgetManifest = `apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  replicas: 2
  color: blue
`

const widgetTable = `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},
"columnDefinitions":[{"name":"Name","type":"string"},{"name":"Replicas","type":"integer"},{"name":"Color","type":"string","priority":1},{"name":"Age","type":"date"}],
"rows":[{"cells":["w1",2,"blue","5m"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"w1","namespace":"default"}}}]}`

const widgetJSON = `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default","resourceVersion":"7"},"spec":{"replicas":2,"color":"blue"}}`

// Our kubectl finds custom resources through discovery and reads and writes them as the
// real one does: tables the server renders with the printer columns, merge patches, the scale
// subresource.
func TestCustomResources(t *testing.T) {
	const base = "/apis/example.com/v1/namespaces/default/widgets"
	tests := []struct {
		name  string
		args  []string
		stdin string
		// routes answer besides discovery; each request's Content-Type and Accept and body are
		// recorded as "METHOD path" → "content-type|accept|body".
		routes    map[string]string
		wantCalls []string
		wantSeen  map[string]string
		wantOut   string
		wantErr   string
		wantCode  int
	}{
		{name: "get table with the printer columns", args: []string{"get", "widgets"},
			routes:    map[string]string{"GET " + base: widgetTable},
			wantCalls: []string{"GET " + base},
			wantOut:   "NAME   REPLICAS   AGE\nw1     2          5m\n"},
		{name: "get wide by short name and name", args: []string{"get", "wd", "w1", "-o", "wide"},
			routes:    map[string]string{"GET " + base + "/w1": widgetTable},
			wantCalls: []string{"GET " + base + "/w1"},
			wantSeen:  map[string]string{"GET " + base + "/w1": "|application/json;as=Table;v=v1;g=meta.k8s.io|"},
			wantOut:   "NAME   REPLICAS   COLOR   AGE\nw1     2          blue    5m\n"},
		{name: "get names with a selector", args: []string{"get", "widget.example.com", "-o", "name", "-l", "app=x"},
			routes:    map[string]string{"GET " + base: `{"apiVersion":"example.com/v1","kind":"WidgetList","items":[` + widgetJSON + `]}`},
			wantCalls: []string{"GET " + base},
			wantOut:   "widget.example.com/w1\n"},
		{name: "get yaml of another version", args: []string{"get", "widgets.v1beta1.example.com/w1", "-o", "yaml"},
			routes:    map[string]string{"GET /apis/example.com/v1beta1/namespaces/default/widgets/w1": strings.Replace(widgetJSON, "example.com/v1", "example.com/v1beta1", 1)},
			wantCalls: []string{"GET /apis/example.com/v1beta1/namespaces/default/widgets/w1"},
			wantOut: "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\n  resourceVersion: \"7\"\n" +
				"spec:\n  color: blue\n  replicas: 2\n"},
		{name: "get a cluster-scoped custom resource", args: []string{"get", "gadget", "g1", "-o", "name"},
			routes:    map[string]string{"GET /apis/example.com/v1/gadgets/g1": `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1"}}`},
			wantCalls: []string{"GET /apis/example.com/v1/gadgets/g1"},
			wantOut:   "gadget.example.com/g1\n"},
		{name: "apply creates", args: []string{"apply", "-f", "-"}, stdin: widgetManifest,
			routes:    map[string]string{"POST " + base: widgetJSON},
			wantCalls: []string{"GET " + base + "/w1", "POST " + base},
			wantOut:   "widget.example.com/w1 created\n"},
		{name: "apply configures with a merge patch", args: []string{"apply", "-f", "-"}, stdin: strings.Replace(widgetManifest, "blue", "red", 1),
			routes:    map[string]string{"GET " + base + "/w1": widgetJSON, "PATCH " + base + "/w1": widgetJSON},
			wantCalls: []string{"GET " + base + "/w1", "PATCH " + base + "/w1"},
			wantSeen:  map[string]string{"PATCH " + base + "/w1": `application/merge-patch+json|application/json|{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w1\",\"namespace\":\"default\"},\"spec\":{\"color\":\"red\",\"replicas\":2}}\n"}},"spec":{"color":"red"}}`},
			wantOut:   "widget.example.com/w1 configured\n"},
		{name: "create", args: []string{"create", "-f", "-", "-n", "team"}, stdin: widgetManifest,
			routes:    map[string]string{"POST /apis/example.com/v1/namespaces/team/widgets": widgetJSON},
			wantCalls: []string{"POST /apis/example.com/v1/namespaces/team/widgets"},
			wantOut:   "widget.example.com/w1 created\n"},
		{name: "replace puts over the live version", args: []string{"replace", "-f", "-"}, stdin: widgetManifest,
			routes:    map[string]string{"GET " + base + "/w1": widgetJSON, "PUT " + base + "/w1": widgetJSON},
			wantCalls: []string{"GET " + base + "/w1", "PUT " + base + "/w1"},
			wantSeen: map[string]string{"PUT " + base + "/w1": `application/json|application/json|` +
				`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default","resourceVersion":"7"},"spec":{"color":"blue","replicas":2}}`},
			wantOut: "widget.example.com/w1 replaced\n"},
		{name: "unknown kind", args: []string{"apply", "-f", "-"}, stdin: strings.Replace(widgetManifest, "Widget", "Sprocket", 1),
			wantErr: "error: resource mapping not found for name: \"w1\" namespace: \"\" from \"STDIN\": no matches for kind \"Sprocket\" in version \"example.com/v1\"\n" +
				"ensure CRDs are installed first\n", wantCode: 1},
		{name: "delete by name", args: []string{"delete", "widget", "w1", "--wait=false"},
			routes:    map[string]string{"DELETE " + base + "/w1": `{"kind":"Status","apiVersion":"v1","status":"Success"}`},
			wantCalls: []string{"DELETE " + base + "/w1"},
			wantOut:   "widget.example.com \"w1\" deleted\n"},
		{name: "delete by file", args: []string{"delete", "-f", "-", "--wait=false"}, stdin: widgetManifest,
			routes:    map[string]string{"DELETE " + base + "/w1": `{"kind":"Status","apiVersion":"v1","status":"Success"}`},
			wantCalls: []string{"DELETE " + base + "/w1"},
			wantOut:   "widget.example.com \"w1\" deleted\n"},
		{name: "delete all", args: []string{"delete", "wd", "--all", "--wait=false"},
			routes: map[string]string{"GET " + base: `{"apiVersion":"example.com/v1","kind":"WidgetList","items":[` + widgetJSON + `]}`,
				"DELETE " + base + "/w1": `{"kind":"Status","apiVersion":"v1","status":"Success"}`},
			wantCalls: []string{"GET " + base, "DELETE " + base + "/w1"},
			wantOut:   "widget.example.com \"w1\" deleted\n"},
		{name: "scale through the scale subresource", args: []string{"scale", "widgets/w1", "--replicas=3"},
			routes:    map[string]string{"PATCH " + base + "/w1/scale": `{"kind":"Scale","apiVersion":"autoscaling/v1","spec":{"replicas":3}}`},
			wantCalls: []string{"PATCH " + base + "/w1/scale"},
			wantSeen:  map[string]string{"PATCH " + base + "/w1/scale": `application/merge-patch+json|application/json|{"spec":{"replicas":3}}`},
			wantOut:   "widget.example.com/w1 scaled\n"},
		{name: "scale without a scale subresource", args: []string{"scale", "gadget/g1", "--replicas=3"},
			wantErr: "error: cannot scale gadget.example.com: it has no scale subresource\n", wantCode: 1},
		{name: "merge patch", args: []string{"patch", "widget", "w1", "--type=merge", "-p", `{"spec":{"color":"red"}}`},
			routes:    map[string]string{"GET " + base + "/w1": widgetJSON, "PATCH " + base + "/w1": strings.Replace(widgetJSON, `"7"`, `"8"`, 1)},
			wantCalls: []string{"GET " + base + "/w1", "PATCH " + base + "/w1"},
			wantSeen:  map[string]string{"PATCH " + base + "/w1": `application/merge-patch+json|application/json|{"spec":{"color":"red"}}`},
			wantOut:   "widget.example.com/w1 patched\n"},
		{name: "strategic merge patch refused", args: []string{"patch", "widget", "w1", "-p", `{"spec":{"color":"red"}}`},
			routes:    map[string]string{"GET " + base + "/w1": widgetJSON},
			wantCalls: []string{"GET " + base + "/w1", "PATCH " + base + "/w1"},
			wantErr: "error: application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget: " +
				"strategic merge patch is not supported for Widget.example.com\n", wantCode: 1},
		{name: "unknown type", args: []string{"get", "sprockets"},
			wantErr: "error: the server doesn't have a resource type \"sprockets\"\n", wantCode: 1},
		{name: "unknown type in a group", args: []string{"get", "sprockets.example.com"},
			wantErr: "error: the server doesn't have a resource type \"sprockets\"\n", wantCode: 1},
		{name: "api-resources", args: []string{"api-resources"},
			wantOut: "NAME      SHORTNAMES   APIVERSION       NAMESPACED   KIND\n" +
				"pods      po           v1               true         Pod\n" +
				"gadgets                example.com/v1   false        Gadget\n" +
				"widgets   wd           example.com/v1   true         Widget\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]string{}
			f := &fakeAPI{routes: map[string]http.HandlerFunc{}}
			serveDiscovery(f, func() []*metav1.APIResourceList { return widgetDiscovery(true) })
			// The apiserver refuses strategic merge patches of custom resources.
			f.routes["PATCH "+base+"/w1"] = func(w http.ResponseWriter, r *http.Request) {
				writeStatus(w, apierror.New(apierror.ErrUnsupportedMediaType, "strategic merge patch is not supported for Widget.example.com"))
			}
			for key, body := range tt.routes {
				f.routes[key] = func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					mu.Lock()
					seen[key] = r.Header.Get("Content-Type") + "|" + r.Header.Get("Accept") + "|" + string(b)
					mu.Unlock()
					jsonReply(body)(w, r)
				}
			}
			out, errOut, code := run(t, f, tt.stdin, tt.args...)
			if code != tt.wantCode || out != tt.wantOut || errOut != tt.wantErr {
				t.Errorf("got exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantCalls, withoutDiscovery(f.calls)); diff != "" {
				t.Errorf("requests besides discovery (-want +got):\n%s", diff)
			}
			for key, want := range tt.wantSeen {
				if got := seen[key]; got != want {
					t.Errorf("%s: content-type|accept|body = %q, want %q", key, got, want)
				}
			}
		})
	}
}

// A kind discovery did not list when it was read is looked for in a newly read discovery,
// once: a CustomResourceDefinition created a moment ago is found.
func TestDiscoveryReadAgainOnAMiss(t *testing.T) {
	const gadget = "---\napiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\n"
	const sprocket = "---\napiVersion: example.com/v1\nkind: Sprocket\nmetadata:\n  name: s1\n"
	var reads atomic.Int32
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"POST /apis/example.com/v1/namespaces/default/widgets": jsonReply(widgetJSON),
		"POST /apis/example.com/v1/gadgets":                    jsonReply(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1"}}`),
	}}
	// Gadgets are served from the second read of discovery on.
	serveDiscovery(f, func() []*metav1.APIResourceList { return widgetDiscovery(reads.Load() > 1) })
	apis := f.routes["GET /apis"]
	f.routes["GET /apis"] = func(w http.ResponseWriter, r *http.Request) {
		reads.Add(1)
		apis(w, r)
	}
	out, errOut, code := run(t, f, widgetManifest+gadget+sprocket, "create", "-f", "-")
	if code != 1 || out != "widget.example.com/w1 created\ngadget.example.com/g1 created\n" ||
		!strings.Contains(errOut, `no matches for kind "Sprocket" in version "example.com/v1"`) {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	// Widgets read discovery, gadgets missed and read it again, sprockets missed twice.
	if got := reads.Load(); got != 3 {
		t.Errorf("discovery read %d times, want 3", got)
	}
}
