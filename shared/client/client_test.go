package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/scheme"
)

// seen is what the fake server recorded about one request.
type seen struct {
	Method, Path, Query, Auth, Accept, ContentType, Body string
}

// fakeServer answers every request with the handler's reply and records what it got.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newFake(t *testing.T, h http.HandlerFunc) (*fakeServer, *Client) {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"),
			r.Header.Get("Accept"), r.Header.Get("Content-Type"), string(body)})
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	c, err := New(&Config{Server: f.URL, Token: "tok", CAData: caPEM(f.Server)})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func (f *fakeServer) last(t *testing.T) seen {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		t.Fatal("server got no request")
	}
	return f.reqs[len(f.reqs)-1]
}

func caPEM(s *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

func reply(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func res(t *testing.T, name string) *scheme.Resource {
	t.Helper()
	r, err := scheme.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResourcePath(t *testing.T) {
	tests := []struct {
		res, ns, name string
		sub           []string
		want          string
		wantErr       bool
	}{
		{res: "pods", ns: "default", name: "web", want: "/api/v1/namespaces/default/pods/web"},
		{res: "pods", ns: "default", name: "web", sub: []string{"status"}, want: "/api/v1/namespaces/default/pods/web/status"},
		{res: "pods", want: "/api/v1/pods"},
		{res: "nodes", ns: "ignored", name: "n1", want: "/api/v1/nodes/n1"},
		{res: "deploy", ns: "kube-system", want: "/apis/apps/v1/namespaces/kube-system/deployments"},
		{res: "hpa", ns: "a", name: "b", want: "/apis/autoscaling/v2/namespaces/a/horizontalpodautoscalers/b"},
		{res: "functions", ns: "a", name: "f", want: "/apis/serverless.minik8s.io/v1/namespaces/a/functions/f"},
		{res: "pods", name: "web", wantErr: true},
		{res: "pods", ns: "a", sub: []string{"log"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			got, err := ResourcePath(res(t, tt.res), tt.ns, tt.name, tt.sub...)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ResourcePath = %q, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ResourcePath = %q, want %q", got, tt.want)
			}
		})
	}
}

const podJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","resourceVersion":"7"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`

func TestTypedRequests(t *testing.T) {
	five := int64(5)
	bg := metav1.DeletePropagationBackground
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "6"}}
	tests := []struct {
		name  string
		reply string
		call  func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error
		want  seen
	}{
		{
			name: "get", reply: podJSON,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				got, err := p.Get(t.Context(), "default", "web", metav1.GetOptions{})
				if err == nil && (got.Name != "web" || got.ResourceVersion != "7" || got.Spec.Containers[0].Image != "nginx") {
					t.Errorf("decoded %+v", got)
				}
				return err
			},
			want: seen{Method: "GET", Path: "/api/v1/namespaces/default/pods/web"},
		},
		{
			name: "list with every option", reply: `{"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"9","continue":"c2"},"items":[` + podJSON + `]}`,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				l, err := p.List(t.Context(), "", metav1.ListOptions{LabelSelector: "app=web,tier!=db", FieldSelector: "spec.nodeName=n1",
					Limit: 10, Continue: "c1", ResourceVersion: "3", TimeoutSeconds: &five, AllowWatchBookmarks: true})
				if err == nil && (len(l.Items) != 1 || l.ResourceVersion != "9" || l.Continue != "c2") {
					t.Errorf("decoded list %+v", l)
				}
				return err
			},
			want: seen{Method: "GET", Path: "/api/v1/pods",
				Query: url.Values{"labelSelector": {"app=web,tier!=db"}, "fieldSelector": {"spec.nodeName=n1"}, "limit": {"10"},
					"continue": {"c1"}, "resourceVersion": {"3"}, "timeoutSeconds": {"5"}, "allowWatchBookmarks": {"true"}}.Encode()},
		},
		{
			name: "create fills apiVersion and kind", reply: podJSON,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				_, err := p.Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{"All"}})
				if pod.Kind != "" {
					t.Error("Create changed the caller's object")
				}
				return err
			},
			want: seen{Method: "POST", Path: "/api/v1/namespaces/default/pods", Query: "dryRun=All", ContentType: "application/json",
				Body: `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","resourceVersion":"6"},"spec":{"containers":null},"status":{}}`},
		},
		{
			name: "update status", reply: podJSON,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				_, err := p.UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
				return err
			},
			want: seen{Method: "PUT", Path: "/api/v1/namespaces/default/pods/web/status", ContentType: "application/json",
				Body: `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web","namespace":"default","resourceVersion":"6"},"spec":{"containers":null},"status":{}}`},
		},
		{
			name: "strategic patch", reply: podJSON,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				_, err := p.Patch(t.Context(), "default", "web", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))
				return err
			},
			want: seen{Method: "PATCH", Path: "/api/v1/namespaces/default/pods/web", ContentType: "application/strategic-merge-patch+json",
				Body: `{"metadata":{"labels":{"a":"b"}}}`},
		},
		{
			name: "delete", reply: `{"kind":"Status","apiVersion":"v1","status":"Success"}`,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				return p.Delete(t.Context(), "default", "web", metav1.DeleteOptions{GracePeriodSeconds: &five, PropagationPolicy: &bg})
			},
			want: seen{Method: "DELETE", Path: "/api/v1/namespaces/default/pods/web", Query: "gracePeriodSeconds=5&propagationPolicy=Background",
				ContentType: "application/json", Body: `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5,"propagationPolicy":"Background"}`},
		},
		{
			name: "delete collection", reply: `{"kind":"PodList","apiVersion":"v1","items":[]}`,
			call: func(t *testing.T, p *Typed[*corev1.Pod, *corev1.PodList]) error {
				return p.DeleteCollection(t.Context(), "default", metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=web"})
			},
			want: seen{Method: "DELETE", Path: "/api/v1/namespaces/default/pods", Query: "labelSelector=app%3Dweb",
				ContentType: "application/json", Body: `{"kind":"DeleteOptions","apiVersion":"v1"}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFake(t, reply(200, tt.reply))
			p := For[*corev1.Pod, *corev1.PodList](c, res(t, "pods"))
			if err := tt.call(t, p); err != nil {
				t.Fatal(err)
			}
			got := f.last(t)
			tt.want.Auth = "Bearer tok"
			tt.want.Accept = "application/json"
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	tests := []struct {
		name    string
		code    int
		body    string
		is      error
		message string
	}{
		{"status not found", 404, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" not found","reason":"NotFound","code":404}`,
			apierror.ErrNotFound, `pods "x" not found`},
		{"status already exists", 409, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"x\" already exists","reason":"AlreadyExists","code":409}`,
			apierror.ErrAlreadyExists, `pods "x" already exists`},
		{"status conflict", 409, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Operation cannot be fulfilled","reason":"Conflict","code":409}`,
			apierror.ErrConflict, "Operation cannot be fulfilled"},
		{"status invalid", 422, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Pod \"x\" is invalid: spec.containers[0].image: Required value","reason":"Invalid","code":422,"details":{"name":"x","kind":"Pod","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.containers[0].image"}]}}`,
			apierror.ErrInvalid, `Pod "x" is invalid: spec.containers[0].image: Required value`},
		{"status gone", 410, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version","reason":"Expired","code":410}`,
			apierror.ErrGone, "too old resource version"},
		{"html not found", 404, `<html>404 page</html>`, apierror.ErrNotFound, "the server could not find the requested resource"},
		{"plain conflict", 409, `busy`, apierror.ErrConflict, "busy"},
		{"plain unauthorized", 401, ``, apierror.ErrUnauthorized, "the server has asked for the client to provide credentials"},
		{"plain 500", 500, `boom`, apierror.ErrInternal, "boom"},
		{"plain 503", 503, ``, apierror.ErrUnavailable, "the server responded with status 503 (Service Unavailable)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFake(t, reply(tt.code, tt.body))
			_, err := For[*corev1.Pod, *corev1.PodList](c, res(t, "pods")).Get(t.Context(), "default", "x", metav1.GetOptions{})
			if !errors.Is(err, tt.is) {
				t.Fatalf("error %v is not %v", err, tt.is)
			}
			var ae *apierror.Error
			if !errors.As(err, &ae) {
				t.Fatalf("error %T is not *apierror.Error", err)
			}
			if ae.Status.Message != tt.message || ae.Status.Code != int32(tt.code) {
				t.Errorf("status = %d %q, want %d %q", ae.Status.Code, ae.Status.Message, tt.code, tt.message)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	f, _ := newFake(t, reply(200, `{"gitVersion":"v1.32.0-minik8s"}`))
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"right CA", Config{Server: f.URL, CAData: caPEM(f.Server)}, false},
		{"wrong CA", Config{Server: f.URL, CAData: otherCA(t)}, true},
		{"insecure", Config{Server: f.URL, Insecure: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(&tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.ServerVersion(t.Context())
			if tt.wantErr != (err != nil) {
				t.Fatalf("ServerVersion error = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && v.GitVersion != "v1.32.0-minik8s" {
				t.Errorf("gitVersion = %q", v.GitVersion)
			}
		})
	}
	if _, err := New(&Config{Server: f.URL, CAData: []byte("not pem")}); err == nil {
		t.Error("New accepted CA data without a certificate")
	}
}

func TestFromKubeconfig(t *testing.T) {
	f, _ := newFake(t, reply(200, `{"gitVersion":"v1"}`))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := kubeconfig.Write(path, kubeconfig.New("minik8s", f.URL, string(caPEM(f.Server)), "admin", "secret", "team")); err != nil {
		t.Fatal(err)
	}
	cfg, err := FromKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server != f.URL || cfg.Token != "secret" || cfg.Namespace != "team" || cfg.AuthInfo != "admin" {
		t.Errorf("config = %+v", cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ServerVersion(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := f.last(t).Auth; got != "Bearer secret" {
		t.Errorf("Authorization = %q", got)
	}
}

func TestImpersonationHeaders(t *testing.T) {
	tests := []struct {
		name string
		imp  Impersonation
		want http.Header
	}{
		{name: "none", want: http.Header{}},
		{name: "user", imp: Impersonation{UserName: "jane"}, want: http.Header{"Impersonate-User": {"jane"}}},
		{name: "user, uid and groups", imp: Impersonation{UserName: "system:serviceaccount:a:b", UID: "42", Groups: []string{"g1", "g2"}},
			want: http.Header{"Impersonate-User": {"system:serviceaccount:a:b"}, "Impersonate-Uid": {"42"}, "Impersonate-Group": {"g1", "g2"}}},
		// Groups alone impersonate nobody: the caller refuses them before building the client.
		{name: "groups without a user", imp: Impersonation{Groups: []string{"g"}}, want: http.Header{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got http.Header
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = http.Header{}
				for k, v := range r.Header {
					if strings.HasPrefix(k, "Impersonate-") {
						got[k] = v
					}
				}
				reply(200, `{"gitVersion":"v1"}`)(w, r)
			}))
			t.Cleanup(srv.Close)
			c, err := New(&Config{Server: srv.URL, Token: "tok", CAData: caPEM(srv), Impersonate: tt.imp})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ServerVersion(t.Context()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("impersonation headers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDynamicListDecoding(t *testing.T) {
	_, c := newFake(t, reply(200, `{"apiVersion":"apps/v1","kind":"DeploymentList","metadata":{"resourceVersion":"4"},"items":[{"metadata":{"name":"a","namespace":"n"},"spec":{"replicas":3}}]}`))
	l, err := Dynamic(c, res(t, "deploy")).List(t.Context(), "n", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 1 {
		t.Fatalf("items = %d", len(l.Items))
	}
	it := l.Items[0]
	got := []any{it.GetAPIVersion(), it.GetKind(), it.GetName(), it.Object["spec"].(map[string]any)["replicas"], l.GetResourceVersion()}
	want := []any{"apps/v1", "Deployment", "a", int64(3), "4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

func TestTableRequests(t *testing.T) {
	table := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","type":"string","priority":0}],"rows":[{"cells":["web"]}]}`
	f, c := newFake(t, reply(200, table))
	got, err := c.ListTable(t.Context(), res(t, "po"), "default", metav1.ListOptions{LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != 1 || got.Rows[0].Cells[0] != "web" || got.ColumnDefinitions[0].Name != "Name" {
		t.Errorf("table = %+v", got)
	}
	if r := f.last(t); r.Accept != TableAccept || r.Path != "/api/v1/namespaces/default/pods" || r.Query != "labelSelector=a%3Db" {
		t.Errorf("request = %+v", r)
	}

	_, c = newFake(t, reply(200, `{"kind":"PodList","apiVersion":"v1","items":[]}`))
	if _, err := c.GetTable(t.Context(), res(t, "po"), "default", "web"); err == nil {
		t.Error("GetTable accepted a response that is not a Table")
	}
}

func TestServerResources(t *testing.T) {
	f, c := newFake(t, reply(200, `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[{"name":"deployments","namespaced":true,"kind":"Deployment","verbs":["get"],"shortNames":["deploy"]}]}`))
	l, err := c.ServerResources(t.Context(), "apps/v1")
	if err != nil {
		t.Fatal(err)
	}
	if f.last(t).Path != "/apis/apps/v1" || len(l.APIResources) != 1 || l.APIResources[0].ShortNames[0] != "deploy" {
		t.Errorf("resources = %+v from %s", l, f.last(t).Path)
	}
	if _, err := c.ServerResources(t.Context(), "v1"); err != nil {
		t.Fatal(err)
	}
	if p := f.last(t).Path; p != "/api/v1" {
		t.Errorf("core discovery path = %q", p)
	}
}

func TestLogs(t *testing.T) {
	f, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "line1\nline2\n") })
	tail := int64(2)
	rc, err := c.Logs(t.Context(), "default", "web", corev1.PodLogOptions{Container: "app", Follow: true, Timestamps: true, TailLines: &tail, Previous: true})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "line1\nline2\n" {
		t.Errorf("log = %q", data)
	}
	r := f.last(t)
	q, _ := url.ParseQuery(r.Query)
	want := url.Values{"container": {"app"}, "follow": {"true"}, "previous": {"true"}, "timestamps": {"true"}, "tailLines": {"2"}}
	if r.Path != "/api/v1/namespaces/default/pods/web/log" || !cmp.Equal(q, want) {
		t.Errorf("request %s ? %v, want %v", r.Path, q, want)
	}
}

func TestQPSLimiter(t *testing.T) {
	l := newLimiter(10, 2)
	base := time.Unix(1000, 0)
	var waits []time.Duration
	for range 4 {
		waits = append(waits, l.reserve(base))
	}
	// Two go at once (the burst), then each waits one more interval of 100ms.
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond}
	if diff := cmp.Diff(want, waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	// After a second of quiet the bucket is full again.
	if d := l.reserve(base.Add(time.Second)); d != 0 {
		t.Errorf("wait after refill = %v, want 0", d)
	}
}

// otherCA is a CA that did not sign the test server's certificate (all httptest servers share
// one certificate, so a second server would not do).
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"}, IsCA: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestMustForFindsTheResource(t *testing.T) {
	c, err := New(&Config{Server: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](c).Resource().Plural; got != "configmaps" {
		t.Fatalf("resource %s", got)
	}
	if got := MustFor[*corev1.Event, *corev1.EventList](c).Resource().Plural; got != "events" {
		t.Fatalf("resource %s", got)
	}
}

func TestMetadataRequests(t *testing.T) {
	list := `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12"},"items":[` +
		`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"rs1","namespace":"n","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"u1"}]}}]}`
	f, c := newFake(t, reply(200, list))
	m := Metadata(c, res(t, "rs"))
	l, err := m.List(t.Context(), "", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.Accept != MetadataAccept || r.Path != "/apis/apps/v1/replicasets" {
		t.Errorf("request = %+v", r)
	}
	if len(l.Items) != 1 {
		t.Fatalf("items = %d", len(l.Items))
	}
	it := l.Items[0]
	got := []string{l.ResourceVersion, it.APIVersion, it.Kind, it.Name, it.OwnerReferences[0].Name}
	if diff := cmp.Diff([]string{"12", "apps/v1", "ReplicaSet", "rs1", "d"}, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}

	f, c = newFake(t, reply(200, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"web","namespace":"default"}}`))
	obj, err := Metadata(c, res(t, "po")).Get(t.Context(), "default", "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.last(t); r.Accept != MetadataAccept || obj.Kind != "Pod" || obj.APIVersion != "v1" || obj.Name != "web" {
		t.Errorf("request %+v gave %+v", r, obj)
	}
}
