package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
)

func TestMasterService(t *testing.T) {
	tests := []struct {
		cidr, ip, err string
	}{
		{cidr: DefaultServiceCIDR, ip: "10.96.0.1"},
		{cidr: "10.100.8.0/21", ip: "10.100.8.1"},
		{cidr: "10.100.8.7/21", ip: "10.100.8.1"},
		{cidr: "10.0.0.0/32", err: `--service-cidr "10.0.0.0/32" has no address for the kubernetes Service`},
		{cidr: "fd00::/108", err: `--service-cidr "fd00::/108" is not an IPv4 prefix`},
	}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			svc, err := masterService(tt.cidr)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"KUBERNETES_SERVICE_HOST": tt.ip, "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443",
				"KUBERNETES_PORT": "tcp://" + tt.ip + ":443", "KUBERNETES_PORT_443_TCP": "tcp://" + tt.ip + ":443",
				"KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": "443", "KUBERNETES_PORT_443_TCP_ADDR": tt.ip,
			}
			if d := cmp.Diff(want, spec.ServiceEnv([]*corev1.Service{svc}, "any", false)); d != "" {
				t.Errorf("variables (-want +got):\n%s", d)
			}
		})
	}
}

func TestServiceList(t *testing.T) {
	master, err := masterService(DefaultServiceCIDR)
	if err != nil {
		t.Fatal(err)
	}
	real := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1"}}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "kubernetes"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.5.5"}}
	tests := []struct {
		name   string
		synced bool
		cached []*corev1.Service
		want   []*corev1.Service
		err    string
	}{
		{name: "not synced", err: "the services cache has not synced"},
		{name: "the stand-in until the apiserver's exists", synced: true, cached: []*corev1.Service{other}, want: []*corev1.Service{other, master}},
		{name: "the apiserver's once it exists", synced: true, cached: []*corev1.Service{real, other}, want: []*corev1.Service{real, other}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := informer.NewStore(informer.Indexers{informer.NamespaceIndex: informer.NamespaceIndexFunc})
			for _, s := range tt.cached {
				if _, _, err := store.Apply(watch.Added, s); err != nil {
					t.Fatal(err)
				}
			}
			got, err := serviceList{synced: func() bool { return tt.synced }, store: store, master: master}.List()
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := func(l []*corev1.Service) map[string]string {
				out := map[string]string{}
				for _, s := range l {
					out[s.Namespace+"/"+s.Name] = s.Spec.ClusterIP
				}
				return out
			}
			if d := cmp.Diff(names(tt.want), names(got)); d != "" {
				t.Errorf("services (-want +got):\n%s", d)
			}
		})
	}
}

func TestAPITokens(t *testing.T) {
	exp := metav1.NewTime(time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC))
	var gotPath, gotMethod string
	var gotBody authnv1.TokenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotMethod = r.URL.Path, r.Method
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &gotBody); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		out := gotBody.DeepCopy()
		out.Status = authnv1.TokenRequestStatus{Token: "jwt", ExpirationTimestamp: exp}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	c, err := client.New(&client.Config{Server: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	secs := int64(3607)
	req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences: []string{"vault"}, ExpirationSeconds: &secs,
		BoundObjectRef: &authnv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "u1"},
	}}
	got, err := newAPITokens(c).CreateToken(t.Context(), "shop", "robot", req)
	if err != nil {
		t.Fatal(err)
	}
	if gotMethod != http.MethodPost || gotPath != "/api/v1/namespaces/shop/serviceaccounts/robot/token" {
		t.Errorf("request %s %s, want POST /api/v1/namespaces/shop/serviceaccounts/robot/token", gotMethod, gotPath)
	}
	wantBody := req.DeepCopy()
	wantBody.TypeMeta = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenRequest"}
	if d := cmp.Diff(wantBody, &gotBody); d != "" {
		t.Errorf("body (-want +got):\n%s", d)
	}
	if got.Status.Token != "jwt" || !got.Status.ExpirationTimestamp.Equal(&exp) {
		t.Errorf("answer %+v, want token jwt expiring %s", got.Status, exp)
	}
}
