package incluster

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// jwt makes an unsigned token with the given payload; the program never checks signatures.
func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + "." + enc([]byte("sig"))
}

func TestParseClaims(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		want    Claims
		wantErr bool
	}{
		{name: "claims of a ServiceAccount token", token: jwt(`{"iat":1000,"exp":4607,"sub":"system:serviceaccount:ns:sa","aud":["x"]}`) + "\n",
			want: Claims{Iat: 1000, Exp: 4607, Sub: "system:serviceaccount:ns:sa"}},
		{name: "two parts", token: "a.b", wantErr: true},
		{name: "payload not base64url", token: "a.!!!.c", wantErr: true},
		{name: "payload not JSON", token: "a." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + ".c", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseClaims(tt.token)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseClaims error = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Settings
		wantErr bool
	}{
		{name: "defaults", want: Settings{Interval: DefaultInterval}},
		{name: "set", env: map[string]string{"INCLUSTER_INTERVAL": "2s", "INCLUSTER_ALL_NAMESPACES": "true"},
			want: Settings{Interval: 2 * time.Second, AllNamespaces: true}},
		{name: "zero interval", env: map[string]string{"INCLUSTER_INTERVAL": "0s"}, wantErr: true},
		{name: "interval without unit", env: map[string]string{"INCLUSTER_INTERVAL": "5"}, wantErr: true},
		{name: "not a boolean", env: map[string]string{"INCLUSTER_ALL_NAMESPACES": "everywhere"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSettings(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSettings error = %v, want error %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		})
	}
}

// forbidden is the Status the apiserver answers a refused list with.
func forbidden(resource, ns string) metav1.Status {
	return metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden,
		Message: resource + ` is forbidden: User "system:serviceaccount:` + ns + `:sa" cannot list resource "` + resource + `" in API group "" in the namespace "` + ns + `"`}
}

func TestProberRound(t *testing.T) {
	podList := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "py"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "go"}},
	}}
	secretList := corev1.SecretList{TypeMeta: metav1.TypeMeta{Kind: "SecretList", APIVersion: "v1"}}
	token := jwt(`{"iat":100,"exp":3707,"sub":"system:serviceaccount:ns:sa"}`)
	tests := []struct {
		name      string
		namespace string
		answers   map[string]any // request path -> body (a Status is sent with its code)
		token     string         // the token file's content; "" leaves no file
		want      Round
	}{
		{
			name: "pods allowed, secrets refused", namespace: "ns", token: token,
			answers: map[string]any{"/api/v1/namespaces/ns/pods": podList, "/api/v1/namespaces/ns/secrets": forbidden("secrets", "ns")},
			want: Round{Pods: 2, PodNames: []string{"ns/go", "ns/py"}, SecretsCode: 403, SecretsError: forbidden("secrets", "ns").Message,
				TokenIat: 100, TokenExp: 3707, TokenSub: "system:serviceaccount:ns:sa"},
		},
		{
			name: "both refused", namespace: "ns", token: token,
			answers: map[string]any{"/api/v1/namespaces/ns/pods": forbidden("pods", "ns"), "/api/v1/namespaces/ns/secrets": forbidden("secrets", "ns")},
			want: Round{Pods: -1, PodsError: forbidden("pods", "ns").Message, SecretsCode: 403, SecretsError: forbidden("secrets", "ns").Message,
				TokenIat: 100, TokenExp: 3707, TokenSub: "system:serviceaccount:ns:sa"},
		},
		{
			name: "all namespaces, secrets allowed, no token file", namespace: "",
			answers: map[string]any{"/api/v1/pods": podList, "/api/v1/secrets": secretList},
			want:    Round{Pods: 2, PodNames: []string{"ns/go", "ns/py"}, SecretsCode: 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, ok := tt.answers[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if st, isStatus := body.(metav1.Status); isStatus {
					w.WriteHeader(int(st.Code))
				}
				_ = json.NewEncoder(w).Encode(body)
			}))
			defer srv.Close()
			core, err := corev1client.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			tokenFile := filepath.Join(t.TempDir(), "token")
			if tt.token != "" {
				if err := os.WriteFile(tokenFile, []byte(tt.token), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			p := Prober{Core: core, Namespace: tt.namespace, TokenFile: tokenFile, Timeout: 5 * time.Second,
				Now: func() time.Time { return time.Unix(1234, 0) },
				Environ: func() []string {
					return []string{"PATH=/bin", "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443"}
				}}
			got := p.Round(t.Context())
			if tt.token == "" && got.TokenError == "" {
				t.Error("no token file, but no tokenError")
			}
			got.TokenError = ""
			tt.want.Time = 1234
			tt.want.Env = map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("round (-want +got):\n%s", diff)
			}
		})
	}
}
