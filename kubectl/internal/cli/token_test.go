package cli

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"

	"minik8s.io/shared/apierror"
)

func TestCreateToken(t *testing.T) {
	const issued = `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","metadata":{"name":"app","namespace":"team","creationTimestamp":"2026-01-02T03:04:05Z"},
		"spec":{"audiences":["https://kubernetes.default.svc.cluster.local"],"boundObjectRef":null,"expirationSeconds":600},
		"status":{"token":"eyJhbGciOi.x.y","expirationTimestamp":"2026-01-02T03:14:05Z"}}`
	ten := int64(600)
	tests := []struct {
		name     string
		args     []string
		post     string
		reply    http.HandlerFunc
		wantSpec authenticationv1.TokenRequestSpec
		wantOut  string
		wantErr  string
		wantCode int
	}{
		// Not a terminal: the token alone, without a newline, for $(kubectl create token ...).
		{name: "token", args: []string{"app", "-n", "team"}, post: "/api/v1/namespaces/team/serviceaccounts/app/token", reply: jsonReply(issued),
			wantOut: "eyJhbGciOi.x.y"},
		{name: "duration and audiences", args: []string{"app", "--duration", "10m", "--audience", "a", "--audience", "b"},
			post: "/api/v1/namespaces/default/serviceaccounts/app/token", reply: jsonReply(issued),
			wantSpec: authenticationv1.TokenRequestSpec{Audiences: []string{"a", "b"}, ExpirationSeconds: &ten}, wantOut: "eyJhbGciOi.x.y"},
		{name: "bound to a pod", args: []string{"app", "--bound-object-kind", "Pod", "--bound-object-name", "web", "--bound-object-uid", "u1"},
			post: "/api/v1/namespaces/default/serviceaccounts/app/token", reply: jsonReply(issued),
			wantSpec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: "u1"}},
			wantOut:  "eyJhbGciOi.x.y"},
		{name: "yaml", args: []string{"app", "-n", "team", "-o", "yaml"}, post: "/api/v1/namespaces/team/serviceaccounts/app/token", reply: jsonReply(issued),
			wantOut: "apiVersion: authentication.k8s.io/v1\nkind: TokenRequest\nmetadata:\n  creationTimestamp: \"2026-01-02T03:04:05Z\"\n  name: app\n  namespace: team\n" +
				"spec:\n  audiences:\n  - https://kubernetes.default.svc.cluster.local\n  boundObjectRef: null\n  expirationSeconds: 600\n" +
				"status:\n  expirationTimestamp: \"2026-01-02T03:14:05Z\"\n  token: eyJhbGciOi.x.y\n"},
		{name: "no such service account", args: []string{"nosuch"}, post: "/api/v1/namespaces/default/serviceaccounts/nosuch/token",
			reply: func(w http.ResponseWriter, _ *http.Request) {
				writeStatus(w, apierror.NotFound("", "serviceaccounts", "nosuch"))
			},
			wantCode: 1, wantErr: "error: failed to create token: serviceaccounts \"nosuch\" not found\n"},
		{name: "no token in the answer", args: []string{"app"}, post: "/api/v1/namespaces/default/serviceaccounts/app/token", reply: jsonReply(`{"status":{}}`),
			wantCode: 1, wantErr: "error: failed to create token: no token in server response\n"},
		{name: "no name", wantCode: 1, wantErr: "error: exactly one NAME is required, got 0\nSee 'kubectl create token -h' for help and examples\n"},
		{name: "sub-second duration", args: []string{"app", "--duration", "1.5s"}, wantCode: 1,
			wantErr: "error: --duration cannot be expressed in units less than seconds\n"},
		{name: "negative duration", args: []string{"app", "--duration", "-1s"}, wantCode: 1,
			wantErr: "error: --duration must be greater than or equal to 0\n"},
		{name: "empty audience", args: []string{"app", "--audience", ""}, wantCode: 1, wantErr: "error: --audience must not be an empty string\n"},
		{name: "name without kind", args: []string{"app", "--bound-object-name", "x"}, wantCode: 1,
			wantErr: "error: --bound-object-name can only be set if --bound-object-kind is provided\n"},
		{name: "uid without kind", args: []string{"app", "--bound-object-uid", "x"}, wantCode: 1,
			wantErr: "error: --bound-object-uid can only be set if --bound-object-kind is provided\n"},
		{name: "unknown kind", args: []string{"app", "--bound-object-kind", "Deployment", "--bound-object-name", "x"}, wantCode: 1,
			wantErr: "error: supported --bound-object-kind values are Node, Pod, Secret\n"},
		{name: "kind without name", args: []string{"app", "--bound-object-kind", "Secret"}, wantCode: 1,
			wantErr: "error: --bound-object-name is required if --bound-object-kind is provided\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got request
			f := &fakeAPI{routes: map[string]http.HandlerFunc{}}
			if tt.post != "" {
				f.routes["POST "+tt.post] = record(&got, tt.reply)
			}
			out, errOut, code := run(t, f, "", append([]string{"create", "token"}, tt.args...)...)
			if out != tt.wantOut || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("exit %d\nstdout:\n%q\nstderr:\n%s\nwant exit %d\nstdout:\n%q\nstderr:\n%s", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			if tt.post == "" {
				if len(f.calls) != 0 {
					t.Errorf("calls = %v, want none", f.calls)
				}
				return
			}
			var sent authenticationv1.TokenRequest
			if err := json.Unmarshal(got.body, &sent); err != nil {
				t.Fatalf("body %q: %v", got.body, err)
			}
			if diff := cmp.Diff(tt.wantSpec, sent.Spec); diff != "" {
				t.Errorf("token request spec (-want +got):\n%s", diff)
			}
		})
	}
}
