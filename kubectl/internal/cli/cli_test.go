package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubectl/internal/apply"
	"minik8s.io/kubectl/internal/mapper"
	"minik8s.io/shared/apierror"
)

// fakeAPI answers from a table of "METHOD path" → handler and records the calls it saw.
type fakeAPI struct {
	mu     sync.Mutex
	routes map[string]http.HandlerFunc
	calls  []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.calls = append(f.calls, key)
	h, ok := f.routes[key]
	f.mu.Unlock()
	if !ok {
		writeStatus(w, apierror.NotFound("", "things", r.URL.Path))
		return
	}
	h(w, r)
}

func writeStatus(w http.ResponseWriter, e *apierror.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(e.Status.Code))
	json.NewEncoder(w).Encode(e.Status)
}

func jsonReply(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// run executes kubectl against the fake and returns stdout, stderr and the exit code.
func run(t *testing.T, f *fakeAPI, stdin string, args ...string) (string, string, int) {
	t.Helper()
	srv := httptest.NewTLSServer(f)
	t.Cleanup(srv.Close)
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	var out, errOut bytes.Buffer
	all := append([]string{"--server", srv.URL, "--insecure-skip-tls-verify", "--token", "t"}, args...)
	code := Main(t.Context(), all, Streams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: nginx:1
`

func TestApply(t *testing.T) {
	created := func(t *testing.T, manifest string) string {
		// What the server holds after our apply of manifest created it.
		u := mustObj(t, manifest)
		u.SetNamespace("default")
		withLA, err := apply.WithLastApplied(u)
		if err != nil {
			t.Fatal(err)
		}
		withLA.SetResourceVersion("5")
		data, _ := json.Marshal(withLA.Object)
		return string(data)
	}
	tests := []struct {
		name      string
		live      string // empty: absent
		wantOut   string
		wantCalls []string
	}{
		{name: "absent", wantOut: "pod/web created\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web", "POST /api/v1/namespaces/default/pods"}},
		{name: "same", live: created(t, podManifest), wantOut: "pod/web unchanged\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web"}},
		{name: "changed", live: created(t, strings.Replace(podManifest, "nginx:1", "nginx:0", 1)), wantOut: "pod/web configured\n",
			wantCalls: []string{"GET /api/v1/namespaces/default/pods/web", "PATCH /api/v1/namespaces/default/pods/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var patchType, postBody string
			f := &fakeAPI{routes: map[string]http.HandlerFunc{
				"POST /api/v1/namespaces/default/pods": func(w http.ResponseWriter, r *http.Request) {
					b, _ := io.ReadAll(r.Body)
					postBody = string(b)
					jsonReply(string(b))(w, r)
				},
				"PATCH /api/v1/namespaces/default/pods/web": func(w http.ResponseWriter, r *http.Request) {
					patchType = r.Header.Get("Content-Type")
					jsonReply(tt.live)(w, r)
				},
			}}
			if tt.live != "" {
				f.routes["GET /api/v1/namespaces/default/pods/web"] = jsonReply(tt.live)
			}
			out, errOut, code := run(t, f, podManifest, "apply", "-f", "-")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout = %q, want %q", out, tt.wantOut)
			}
			if diff := cmp.Diff(tt.wantCalls, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if tt.name == "absent" && !strings.Contains(postBody, apply.LastAppliedAnnotation) {
				t.Errorf("create did not carry the last-applied annotation: %s", postBody)
			}
			if tt.name == "changed" && patchType != "application/strategic-merge-patch+json" {
				t.Errorf("patch content type = %q", patchType)
			}
		})
	}
}

func TestApplyNamespaceMismatch(t *testing.T) {
	f := &fakeAPI{routes: map[string]http.HandlerFunc{}}
	m := strings.Replace(podManifest, "name: web", "name: web\n  namespace: a", 1)
	_, errOut, code := run(t, f, m, "apply", "-n", "b", "-f", "-")
	if code != 1 || !strings.Contains(errOut, `the namespace from the provided object "a" does not match the namespace "b"`) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if len(f.calls) != 0 {
		t.Errorf("calls = %v, want none", f.calls)
	}
}

const podTable = `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},
"columnDefinitions":[{"name":"Name","type":"string"},{"name":"Status","type":"string"},{"name":"Node","type":"string","priority":1}],
"rows":[{"cells":["web","Running","n1"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"web","namespace":"team"}}}]}`

func TestGet(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		routes   map[string]http.HandlerFunc
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "table", args: []string{"get", "po"},
			routes:  map[string]http.HandlerFunc{"GET /api/v1/namespaces/default/pods": jsonReply(podTable)},
			wantOut: "NAME   STATUS\nweb    Running\n"},
		{name: "all namespaces wide", args: []string{"get", "pods", "-A", "-o", "wide"},
			routes:  map[string]http.HandlerFunc{"GET /api/v1/pods": jsonReply(podTable)},
			wantOut: "NAMESPACE   NAME   STATUS    NODE\nteam        web    Running   n1\n"},
		{name: "empty", args: []string{"get", "deploy", "-n", "x"},
			routes:  map[string]http.HandlerFunc{"GET /apis/apps/v1/namespaces/x/deployments": jsonReply(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","type":"string"}],"rows":[]}`)},
			wantErr: "No resources found in x namespace.\n"},
		{name: "not found", args: []string{"get", "pod", "nope"}, routes: map[string]http.HandlerFunc{
			"GET /api/v1/namespaces/default/pods/nope": func(w http.ResponseWriter, _ *http.Request) {
				writeStatus(w, apierror.NotFound("", "pods", "nope"))
			}},
			wantErr: "Error from server (NotFound): pods \"nope\" not found\n", wantCode: 1},
		{name: "name output", args: []string{"get", "deployments.apps", "-o", "name"},
			routes:  map[string]http.HandlerFunc{"GET /apis/apps/v1/namespaces/default/deployments": jsonReply(`{"kind":"DeploymentList","apiVersion":"apps/v1","items":[{"metadata":{"name":"d1"}}]}`)},
			wantOut: "deployment.apps/d1\n"},
		{name: "jsonpath of one object", args: []string{"get", "node", "vm", "-o", "jsonpath={.metadata.name} {.spec.taints[?(@.effect==\"NoSchedule\")].key} {.spec.taints}"},
			routes: map[string]http.HandlerFunc{"GET /api/v1/nodes/vm": jsonReply(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"vm"},` +
				`"spec":{"taints":[{"key":"a","effect":"NoSchedule"},{"key":"b","effect":"NoExecute"}]}}`)},
			wantOut: `vm a [{"effect":"NoSchedule","key":"a"},{"effect":"NoExecute","key":"b"}]`},
		{name: "jsonpath range over a list", args: []string{"get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.nodeName}{"\n"}{end}`},
			routes: map[string]http.HandlerFunc{"GET /api/v1/namespaces/default/pods": jsonReply(`{"kind":"PodList","apiVersion":"v1","items":[` +
				`{"metadata":{"name":"a"},"spec":{"nodeName":"n1"}},{"metadata":{"name":"b"},"spec":{}}]}`)},
			wantOut: "a\tn1\nb\t\n"},
		{name: "jsonpath with a missing key prints nothing for it", args: []string{"get", "pods", "-o", "jsonpath={.items[*].status.podIP}"},
			routes: map[string]http.HandlerFunc{"GET /api/v1/namespaces/default/pods": jsonReply(`{"kind":"PodList","apiVersion":"v1","items":[` +
				`{"metadata":{"name":"a"},"status":{"podIP":"10.0.0.1"}},{"metadata":{"name":"b"}}]}`)},
			wantOut: "10.0.0.1"},
		{name: "jsonpath that does not parse", args: []string{"get", "pods", "-o", "jsonpath={.items[*"}, routes: map[string]http.HandlerFunc{},
			wantErr: "error: error parsing jsonpath {.items[*, unterminated array\n", wantCode: 1},
		{name: "jsonpath without a template", args: []string{"get", "pods", "-o", "jsonpath"}, routes: map[string]http.HandlerFunc{},
			wantErr: "error: template format specified but no template given\n", wantCode: 1},
		{name: "unknown output", args: []string{"get", "pods", "-o", "xml"}, routes: map[string]http.HandlerFunc{},
			wantErr: "error: unable to match a printer suitable for the output format \"xml\", allowed formats are: json,jsonpath,jsonpath-file,name,wide,yaml\n", wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, &fakeAPI{routes: tt.routes}, "", tt.args...)
			if code != tt.wantCode || out != tt.wantOut || errOut != tt.wantErr {
				t.Errorf("got exit %d stdout %q stderr %q\nwant exit %d stdout %q stderr %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}

func TestDeleteWaits(t *testing.T) {
	var mu sync.Mutex
	deleted := false
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"GET /api/v1/namespaces/default/pods/web": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			if deleted {
				writeStatus(w, apierror.NotFound("", "pods", "web"))
				return
			}
			jsonReply(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","resourceVersion":"3"}}`)(w, r)
		},
		"DELETE /api/v1/namespaces/default/pods/web": func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			deleted = true
			mu.Unlock()
			if r.URL.Query().Get("gracePeriodSeconds") != "0" {
				t.Errorf("grace period query = %q", r.URL.RawQuery)
			}
			jsonReply(`{"kind":"Status","apiVersion":"v1","status":"Success"}`)(w, r)
		},
	}}
	out, errOut, code := run(t, f, "", "delete", "pod", "web", "--grace-period", "0")
	if code != 0 || out != "pod \"web\" deleted\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	want := []string{"GET /api/v1/namespaces/default/pods/web", "DELETE /api/v1/namespaces/default/pods/web", "GET /api/v1/namespaces/default/pods/web"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// --cascade becomes the propagationPolicy of the DELETE, background when not given.
func TestDeleteCascade(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Background"},
		{[]string{"--cascade"}, "Background"},
		{[]string{"--cascade=orphan"}, "Orphan"},
		{[]string{"--cascade=false"}, "Orphan"},
		{[]string{"--cascade=foreground"}, "Foreground"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got string
			f := &fakeAPI{routes: map[string]http.HandlerFunc{
				"DELETE /apis/apps/v1/namespaces/default/replicasets/web": func(w http.ResponseWriter, r *http.Request) {
					var opts metav1.DeleteOptions
					if err := json.NewDecoder(r.Body).Decode(&opts); err != nil || opts.PropagationPolicy == nil {
						t.Errorf("DeleteOptions body: %v %+v", err, opts)
					} else {
						got = string(*opts.PropagationPolicy)
					}
					jsonReply(`{"kind":"Status","apiVersion":"v1","status":"Success"}`)(w, r)
				},
			}}
			args := append([]string{"delete", "rs", "web", "--wait=false"}, tc.args...)
			if out, errOut, code := run(t, f, "", args...); code != 0 {
				t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
			}
			if got != tc.want {
				t.Errorf("propagationPolicy %q, want %q", got, tc.want)
			}
		})
	}
	_, errOut, code := run(t, &fakeAPI{routes: map[string]http.HandlerFunc{}}, "", "delete", "rs", "web", "--cascade=sometimes")
	if code == 0 || !strings.Contains(errOut, "invalid cascade value") {
		t.Errorf("--cascade=sometimes: exit %d stderr %q", code, errOut)
	}
}

func TestParseTargets(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string
		wantErr bool
	}{
		{args: []string{"po"}, want: []string{"pods:"}},
		{args: []string{"svc", "a", "b"}, want: []string{"services:a,b"}},
		{args: []string{"deploy,rs"}, want: []string{"deployments:", "replicasets:"}},
		{args: []string{"pod/a", "pod/b", "no/n1"}, want: []string{"pods:a,b", "nodes:n1"}},
		{args: []string{"hpa"}, want: []string{"horizontalpodautoscalers:"}},
		{args: []string{"ing"}, want: []string{"ingresses:"}},
		{args: []string{"Deployment.apps"}, want: []string{"deployments:"}},
		{args: []string{"all"}, want: []string{"pods:", "replicationcontrollers:", "services:", "daemonsets:", "deployments:", "replicasets:", "statefulsets:", "horizontalpodautoscalers:", "jobs:", "cronjobs:", "widgets.example.com:"}},
		// Custom resources come from discovery, by any of their names.
		{args: []string{"widgets"}, want: []string{"widgets.example.com:"}},
		{args: []string{"wd", "a"}, want: []string{"widgets.example.com:a"}},
		{args: []string{"Widget.example.com"}, want: []string{"widgets.example.com:"}},
		{args: []string{"widgets.v1beta1.example.com"}, want: []string{"widgets.example.com/v1beta1:"}},
		{args: []string{"widget/a", "wd/b", "po/c"}, want: []string{"widgets.example.com:a,b", "pods:c"}},
		{args: []string{"gadgets"}, want: []string{"gadgets.example.com:"}},
		{args: []string{"pods,svc", "x"}, wantErr: true},
		{args: []string{"nosuch"}, wantErr: true},
		{args: []string{"widgets.other.io"}, wantErr: true},
		{args: nil, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := &options{res: &resolver{discover: func(context.Context) (*mapper.Mapper, error) {
				return mapper.New(widgetDiscovery(true)), nil
			}}}
			got, err := o.parseTargets(t.Context(), tt.args)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseTargets(%v) succeeded", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, g := range got {
				name := g.res.Plural
				if g.res.Custom {
					name += "." + g.res.GVK.Group
					if g.res.GVK.Version != "v1" {
						name += "/" + g.res.GVK.Version
					}
				}
				s = append(s, name+":"+strings.Join(g.names, ","))
			}
			if diff := cmp.Diff(tt.want, s); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatError(t *testing.T) {
	two := apierror.New(apierror.ErrInvalid, "Pod \"x\" is invalid").WithDetails("", "Pod", "x")
	two.Status.Details.Causes = []metav1.StatusCause{{Field: "spec.containers[0].image", Message: "Required value"}, {Field: "metadata.name", Message: "Invalid value"}}
	one := apierror.New(apierror.ErrInvalid, "Pod \"x\" is invalid").WithDetails("", "Pod", "x")
	one.Status.Details.Causes = two.Status.Details.Causes[:1]
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"invalid one field", one, `The Pod "x" is invalid: spec.containers[0].image: Required value`},
		{"invalid two fields", two, "The Pod \"x\" is invalid: \n* spec.containers[0].image: Required value\n* metadata.name: Invalid value"},
		{"already exists", apierror.AlreadyExists("", "pods", "x"), `Error from server (AlreadyExists): pods "x" already exists`},
		{"unauthorized", apierror.New(apierror.ErrUnauthorized, "Unauthorized"), "error: You must be logged in to the server (Unauthorized)"},
		{"plain", io.ErrUnexpectedEOF, "error: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatError(tt.err); got != tt.want {
				t.Errorf("FormatError = %q, want %q", got, tt.want)
			}
		})
	}
}

// A rejected object makes create and apply fail loudly with the server's message, and every
// write asks the server for strict field validation.
func TestWriteErrorsAndStrictValidation(t *testing.T) {
	for _, verb := range []string{"create", "apply"} {
		t.Run(verb, func(t *testing.T) {
			var query string
			f := &fakeAPI{routes: map[string]http.HandlerFunc{
				"POST /api/v1/namespaces/default/pods": func(w http.ResponseWriter, r *http.Request) {
					query = r.URL.RawQuery
					writeStatus(w, apierror.New(apierror.ErrInvalid, `Pod "web" is invalid: spec.containers[0].image: Required value`))
				},
			}}
			out, errOut, code := run(t, f, podManifest, verb, "-f", "-")
			if code != 1 {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if !strings.Contains(errOut, "spec.containers[0].image: Required value") {
				t.Fatalf("stderr %q lacks the server's message", errOut)
			}
			if !strings.Contains(query, "fieldValidation=Strict") {
				t.Fatalf("query %q lacks fieldValidation=Strict", query)
			}
		})
	}
}

// logs job/NAME reads the logs of a pod the Job's selector picks.
func TestLogsOfAJob(t *testing.T) {
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"GET /apis/batch/v1/namespaces/default/jobs/pi": jsonReply(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"pi","namespace":"default"},
			"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u1"}},"template":{"spec":{"containers":[{"name":"pi","image":"busybox"}]}}}}`),
		"GET /api/v1/namespaces/default/pods": func(w http.ResponseWriter, r *http.Request) {
			if got := r.URL.Query().Get("labelSelector"); got != "batch.kubernetes.io/controller-uid=u1" {
				t.Errorf("labelSelector %q", got)
			}
			jsonReply(`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"pi-x7k2p","namespace":"default"},"spec":{"nodeName":"n1"},"status":{"phase":"Succeeded"}}]}`)(w, r)
		},
		"GET /api/v1/namespaces/default/pods/pi-x7k2p/log": func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "3.14159\n")
		},
	}}
	out, errOut, code := run(t, f, "", "logs", "job/pi")
	if code != 0 || out != "3.14159\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
}

// create prints the name the apiserver gave an object made with generateName.
func TestCreateGenerateName(t *testing.T) {
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"POST /api/v1/namespaces/default/pods": jsonReply(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-x7k2p","namespace":"default"}}`),
	}}
	manifest := strings.Replace(podManifest, "name: web\n", "generateName: web-\n", 1)
	out, errOut, code := run(t, f, manifest, "create", "-f", "-")
	if code != 0 || out != "pod/web-x7k2p created\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want pod/web-x7k2p created", code, out, errOut)
	}
}
