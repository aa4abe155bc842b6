package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"

	"minik8s.io/shared/apierror"
)

// discoveryRoutes serve a small discovery: core v1 (pods, nodes), apps/v1 (deployments) and
// metrics.k8s.io (nodes again, after the core group).
func discoveryRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /api/v1": jsonReply(`{"kind":"APIResourceList","groupVersion":"v1","resources":[
			{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","shortNames":["po"]},
			{"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod"},
			{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","shortNames":["no"]},
			{"name":"serviceaccounts","singularName":"serviceaccount","namespaced":true,"kind":"ServiceAccount","shortNames":["sa"]}]}`),
		"GET /apis": jsonReply(`{"kind":"APIGroupList","groups":[
			{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
			{"name":"metrics.k8s.io","versions":[{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}],"preferredVersion":{"groupVersion":"metrics.k8s.io/v1beta1","version":"v1beta1"}},
			{"name":"rbac.authorization.k8s.io","versions":[{"groupVersion":"rbac.authorization.k8s.io/v1","version":"v1"}],"preferredVersion":{"groupVersion":"rbac.authorization.k8s.io/v1","version":"v1"}}]}`),
		"GET /apis/apps/v1": jsonReply(`{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
			{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","shortNames":["deploy"]}]}`),
		"GET /apis/metrics.k8s.io/v1beta1": jsonReply(`{"kind":"APIResourceList","groupVersion":"metrics.k8s.io/v1beta1","resources":[
			{"name":"nodes","singularName":"","namespaced":false,"kind":"NodeMetrics"}]}`),
		"GET /apis/rbac.authorization.k8s.io/v1": jsonReply(`{"kind":"APIResourceList","groupVersion":"rbac.authorization.k8s.io/v1","resources":[
			{"name":"roles","singularName":"role","namespaced":true,"kind":"Role"},
			{"name":"clusterroles","singularName":"clusterrole","namespaced":false,"kind":"ClusterRole"}]}`),
	}
}

// request is what the fake apiserver got on one route.
type request struct {
	header http.Header
	query  string
	body   []byte
}

// record keeps the request in *got, then lets h answer it.
func record(got *request, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		*got = request{header: r.Header.Clone(), query: r.URL.RawQuery, body: body}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	}
}

// capture answers with reply and keeps the request in *got.
func capture(got *request, reply string) http.HandlerFunc { return record(got, jsonReply(reply)) }

const ssarPath = "POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

func TestCanI(t *testing.T) {
	yes := `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":true}}`
	no := `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","status":{"allowed":false}}`
	tests := []struct {
		name     string
		args     []string
		reply    string
		wantSpec authorizationv1.SelfSubjectAccessReviewSpec // zero: no review is sent
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "allowed", args: []string{"get", "pods"}, reply: yes, wantOut: "yes\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"}}},
		{name: "denied exits 1", args: []string{"list", "deploy", "-n", "team"}, reply: no, wantOut: "no\n", wantCode: 1,
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "team", Verb: "list", Group: "apps", Resource: "deployments"}}},
		{name: "denied with a reason", args: []string{"get", "pods"}, wantCode: 1,
			reply:    `{"kind":"SelfSubjectAccessReview","status":{"allowed":false,"reason":"no RBAC policy matched","evaluationError":"boom"}}`,
			wantOut:  "no - no RBAC policy matched - boom\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"}}},
		{name: "quiet", args: []string{"get", "pods", "-q"}, reply: no, wantCode: 1,
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods"}}},
		{name: "a named object and a subresource", args: []string{"get", "po/web", "--subresource", "log"}, reply: yes, wantOut: "yes\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "pods", Subresource: "log", Name: "web"}}},
		{name: "group qualified with a version", args: []string{"get", "deployments.v1.apps"}, reply: yes, wantOut: "yes\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Group: "apps", Resource: "deployments"}}},
		{name: "cluster-scoped resources warn in a namespace", args: []string{"get", "nodes"}, reply: yes, wantOut: "yes\n",
			wantErr:  "Warning: resource 'nodes' is not namespace scoped\n\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "nodes"}}},
		{name: "and in a group", args: []string{"get", "nodes.metrics"}, reply: yes, wantOut: "yes\n",
			wantErr:  "Warning: resource 'nodes' is not namespace scoped in group 'metrics.k8s.io'\n\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Group: "metrics.k8s.io", Resource: "nodes"}}},
		{name: "all namespaces", args: []string{"frob", "nodes", "-A"}, reply: yes, wantOut: "yes\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "frob", Resource: "nodes"}}},
		{name: "an unknown resource is asked as typed", args: []string{"get", "Widgets.example"}, reply: no, wantOut: "no\n", wantCode: 1,
			wantErr:  "Warning: the server doesn't have a resource type 'widgets' in group 'example'\n\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Resource: "Widgets.example"}}},
		{name: "users are not discovered but known", args: []string{"impersonate", "users"}, reply: yes, wantOut: "yes\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "impersonate", Resource: "users"}}},
		{name: "unknown verb", args: []string{"frob", "pods"}, reply: yes, wantOut: "yes\n", wantErr: "Warning: verb 'frob' is not a known verb\n\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "frob", Resource: "pods"}}},
		{name: "everything", args: []string{"*", "*"}, reply: yes, wantOut: "yes\n",
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "*", Resource: "*"}}},
		{name: "non-resource URL", args: []string{"get", "/logs"}, reply: no, wantOut: "no\n", wantCode: 1,
			wantSpec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/logs"}}},
		{name: "one argument", args: []string{"get"}, wantCode: 1,
			wantErr: "error: you must specify two arguments: verb resource or verb resource/resourceName.\nSee 'kubectl auth can-i -h' for help and examples.\n"},
		{name: "headers without --list", args: []string{"get", "pods", "--no-headers"}, wantCode: 1,
			wantErr: "error: --no-headers cannot be set without --list specified\n"},
		{name: "subresource of a URL", args: []string{"get", "/logs", "--subresource", "x"}, wantCode: 1,
			wantErr: "error: --subresource can not be used with NonResourceURL\n"},
		{name: "list with arguments", args: []string{"get", "pods", "--list"}, wantCode: 1,
			wantErr: "error: list option must be specified with no arguments\n"},
		{name: "list across namespaces", args: []string{"--list", "-A"}, wantCode: 1,
			wantErr: "error: list option can't be specified with neither quiet, all-namespaces nor subresource options\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got request
			f := &fakeAPI{routes: discoveryRoutes()}
			f.routes[ssarPath] = capture(&got, tt.reply)
			out, errOut, code := run(t, f, "", append([]string{"auth", "can-i"}, tt.args...)...)
			if out != tt.wantOut || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("got exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			var sent authorizationv1.SelfSubjectAccessReview
			if got.body != nil {
				if err := json.Unmarshal(got.body, &sent); err != nil {
					t.Fatal(err)
				}
				if sent.Kind != "SelfSubjectAccessReview" || sent.APIVersion != "authorization.k8s.io/v1" {
					t.Errorf("review sent as %s %s", sent.APIVersion, sent.Kind)
				}
			}
			if diff := cmp.Diff(tt.wantSpec, sent.Spec); diff != "" {
				t.Errorf("review spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestImpersonationFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     http.Header
		wantErr  string
		wantCode int
	}{
		{name: "none", want: http.Header{}},
		{name: "a service account", args: []string{"--as", "system:serviceaccount:default:default"},
			want: http.Header{"Impersonate-User": {"system:serviceaccount:default:default"}}},
		{name: "user, groups and uid", args: []string{"--as", "jane", "--as-group", "dev", "--as-group", "ops", "--as-uid", "42"},
			want: http.Header{"Impersonate-User": {"jane"}, "Impersonate-Group": {"dev", "ops"}, "Impersonate-Uid": {"42"}}},
		{name: "groups need a user", args: []string{"--as-group", "dev"}, wantCode: 1,
			wantErr: "error: requesting uid, groups or user-extra for  without impersonating a user\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got request
			f := &fakeAPI{routes: discoveryRoutes()}
			f.routes[ssarPath] = capture(&got, `{"status":{"allowed":true}}`)
			_, errOut, code := run(t, f, "", append([]string{"auth", "can-i", "get", "pods"}, tt.args...)...)
			if code != tt.wantCode || errOut != tt.wantErr {
				t.Fatalf("exit %d, stderr %q; want exit %d, stderr %q", code, errOut, tt.wantCode, tt.wantErr)
			}
			if tt.wantCode != 0 {
				if len(f.calls) != 0 {
					t.Errorf("calls = %v, want none", f.calls)
				}
				return
			}
			imp := http.Header{}
			for _, k := range []string{"Impersonate-User", "Impersonate-Group", "Impersonate-Uid"} {
				if v := got.header.Values(k); len(v) > 0 {
					imp[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, imp); diff != "" {
				t.Errorf("impersonation headers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanIList(t *testing.T) {
	review := `{"kind":"SelfSubjectRulesReview","apiVersion":"authorization.k8s.io/v1","status":{
		"resourceRules":[{"verbs":["get","list"],"apiGroups":[""],"resources":["pods"]},{"verbs":["watch"],"apiGroups":[""],"resources":["pods"]},
			{"verbs":["create"],"apiGroups":["authorization.k8s.io"],"resources":["selfsubjectaccessreviews"]}],
		"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/healthz","/api/*"]}],"incomplete":%s,"evaluationError":"node authorizer does not support user rule resolution"}}`
	tests := []struct {
		name       string
		args       []string
		incomplete string
		wantNS     string
		wantOut    string
		wantErr    string
	}{
		{name: "table", args: []string{"-n", "team"}, incomplete: "false", wantNS: "team", wantOut: "" +
			"Resources                                       Non-Resource URLs   Resource Names   Verbs\n" +
			"selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]\n" +
			"pods                                            []                  []               [get list watch]\n" +
			"                                                [/api/*]            []               [get]\n" +
			"                                                [/healthz]          []               [get]\n"},
		{name: "no headers, incomplete", args: []string{"--no-headers"}, incomplete: "true", wantNS: "default", wantOut: "" +
			"selfsubjectaccessreviews.authorization.k8s.io   []           []    [create]\n" +
			"pods                                            []           []    [get list watch]\n" +
			"                                                [/api/*]     []    [get]\n" +
			"                                                [/healthz]   []    [get]\n",
			wantErr: "Warning: the list may be incomplete: node authorizer does not support user rule resolution\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got request
			f := &fakeAPI{routes: map[string]http.HandlerFunc{
				"POST /apis/authorization.k8s.io/v1/selfsubjectrulesreviews": capture(&got, fmt.Sprintf(review, tt.incomplete)),
			}}
			out, errOut, code := run(t, f, "", append([]string{"auth", "can-i", "--list"}, tt.args...)...)
			if code != 0 || out != tt.wantOut || errOut != tt.wantErr {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant stdout:\n%s\nwant stderr:\n%s", code, out, errOut, tt.wantOut, tt.wantErr)
			}
			var sent authorizationv1.SelfSubjectRulesReview
			if err := json.Unmarshal(got.body, &sent); err != nil {
				t.Fatal(err)
			}
			if sent.Spec.Namespace != tt.wantNS {
				t.Errorf("review namespace = %q, want %q", sent.Spec.Namespace, tt.wantNS)
			}
		})
	}
}

func TestWhoAmI(t *testing.T) {
	review := `{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z"},
		"status":{"userInfo":{"username":"jane","uid":"42","groups":["dev","system:authenticated"],"extra":{"scopes":["b","a"],"reason":["x"]}}}}`
	denied := func(w http.ResponseWriter, _ *http.Request) {
		writeStatus(w, apierror.New(apierror.ErrForbidden, `selfsubjectreviews.authentication.k8s.io is forbidden: User "x" cannot create resource "selfsubjectreviews"`))
	}
	tests := []struct {
		name     string
		args     []string
		reply    http.HandlerFunc
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "table", reply: jsonReply(review), wantOut: "" +
			"ATTRIBUTE       VALUE\n" +
			"Username        jane\n" +
			"UID             42\n" +
			"Groups          [dev system:authenticated]\n" +
			"Extra: reason   [x]\n" +
			"Extra: scopes   [b a]\n"},
		{name: "only a name", reply: jsonReply(`{"kind":"SelfSubjectReview","status":{"userInfo":{"username":"system:anonymous"}}}`),
			wantOut: "ATTRIBUTE   VALUE\nUsername    system:anonymous\n"},
		{name: "json", args: []string{"-o", "json"}, reply: jsonReply(review), wantOut: `{
    "kind": "SelfSubjectReview",
    "apiVersion": "authentication.k8s.io/v1",
    "metadata": {
        "creationTimestamp": "2026-01-02T03:04:05Z"
    },
    "status": {
        "userInfo": {
            "username": "jane",
            "uid": "42",
            "groups": [
                "dev",
                "system:authenticated"
            ],
            "extra": {
                "reason": [
                    "x"
                ],
                "scopes": [
                    "b",
                    "a"
                ]
            }
        }
    }
}
`},
		{name: "name", args: []string{"-o", "name"}, reply: jsonReply(review), wantOut: "selfsubjectreview.authentication.k8s.io/<unknown>\n"},
		{name: "forbidden", reply: denied, wantCode: 1,
			wantErr: "error: the selfsubjectreviews API is not enabled in the cluster or you do not have permission to call it\n"},
		{name: "not served", reply: func(w http.ResponseWriter, _ *http.Request) {
			writeStatus(w, apierror.NotFound("", "selfsubjectreviews", ""))
		}, wantCode: 1,
			wantErr: "error: the selfsubjectreviews API is not enabled in the cluster\nenable APISelfSubjectReview feature gate and authentication.k8s.io/v1alpha1 or authentication.k8s.io/v1beta1 API\n"},
		{name: "bad output", args: []string{"-o", "wide"}, reply: jsonReply(review), wantCode: 1,
			wantErr: "error: unable to match a printer suitable for the output format \"wide\", allowed formats are: json,name,yaml\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{routes: map[string]http.HandlerFunc{"POST /apis/authentication.k8s.io/v1/selfsubjectreviews": tt.reply}}
			out, errOut, code := run(t, f, "", append([]string{"auth", "whoami"}, tt.args...)...)
			if out != tt.wantOut || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
		})
	}
}

func TestForbiddenError(t *testing.T) {
	msg := `secrets is forbidden: User "system:serviceaccount:default:default" cannot list resource "secrets" in API group "" in the namespace "default"`
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"GET /api/v1/namespaces/default/secrets": func(w http.ResponseWriter, _ *http.Request) {
			writeStatus(w, apierror.New(apierror.ErrForbidden, "%s", msg))
		},
	}}
	_, errOut, code := run(t, f, "", "get", "secrets", "--as", "system:serviceaccount:default:default")
	if want := "Error from server (Forbidden): " + msg + "\n"; code != 1 || errOut != want {
		t.Errorf("exit %d, stderr %q; want exit 1, stderr %q", code, errOut, want)
	}
}
