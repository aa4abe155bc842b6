package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/apierror"
)

// echo answers a create with what was sent, as stored: a namespace when the path names one,
// a uid and a creation time.
func echo(got *request) http.HandlerFunc {
	return record(got, func(w http.ResponseWriter, r *http.Request) {
		var obj map[string]any
		_ = json.NewDecoder(r.Body).Decode(&obj)
		md, _ := obj["metadata"].(map[string]any)
		md["uid"], md["creationTimestamp"] = "u1", "2026-01-02T03:04:05Z"
		if parts := strings.Split(r.URL.Path, "/"); len(parts) > 5 && parts[4] == "namespaces" {
			md["namespace"] = parts[5]
		}
		data, _ := json.Marshal(obj)
		jsonReply(string(data))(w, r)
	})
}

func TestCreateRBAC(t *testing.T) {
	const rbac = "/apis/rbac.authorization.k8s.io/v1"
	tests := []struct {
		name      string
		args      []string
		post      string // the path of the create; empty when nothing is sent
		wantQuery string
		wantBody  string // JSON of what was sent
		wantOut   string
		wantErr   string
		wantCode  int
	}{
		{
			name: "role, resolved through discovery",
			args: []string{"role", "pod-reader", "--verb=get,list", "--verb=get", "--resource=po,deploy,pods/log", "--resource-name=a"},
			post: rbac + "/namespaces/default/roles", wantQuery: "fieldManager=kubectl-create&fieldValidation=Strict",
			wantBody: `{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"pod-reader","namespace":"default"},"rules":[
				{"verbs":["get","list"],"apiGroups":[""],"resources":["pods","pods/log"],"resourceNames":["a"]},
				{"verbs":["get","list"],"apiGroups":["apps"],"resources":["deployments"],"resourceNames":["a"]}]}`,
			wantOut: "role.rbac.authorization.k8s.io/pod-reader created\n",
		},
		{
			name: "role, client dry run prints what it would send",
			args: []string{"role", "r", "--verb=get", "--resource=pods", "--dry-run=client", "-o", "yaml"},
			wantOut: "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  creationTimestamp: null\n  name: r\n" +
				"rules:\n- apiGroups:\n  - \"\"\n  resources:\n  - pods\n  verbs:\n  - get\n",
		},
		{
			name: "role, server dry run in a namespace",
			args: []string{"role", "r", "--verb=get", "--resource=pods", "--dry-run=server", "-n", "team"},
			post: rbac + "/namespaces/team/roles", wantQuery: "dryRun=All&fieldManager=kubectl-create&fieldValidation=Strict",
			wantBody: `{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"r","namespace":"team"},"rules":[
				{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`,
			wantOut: "role.rbac.authorization.k8s.io/r created (server dry run)\n",
		},
		{name: "role of an unknown resource", args: []string{"role", "r", "--verb=get", "--resource=widgets"}, wantCode: 1,
			wantErr: "the server doesn't have a resource type \"widgets\"\n"},
		{name: "role binding a pod", args: []string{"role", "r", "--verb=bind", "--resource=pods"}, wantCode: 1,
			wantErr: "error: can not perform 'bind' on 'pods' in group ''\n"},
		{name: "role without verbs", args: []string{"role", "r", "--resource=pods"}, wantCode: 1,
			wantErr: "error: at least one verb must be specified\n"},
		{name: "role with an unusual verb", args: []string{"role", "r", "--verb=frob", "--resource=pods", "--dry-run=client", "-o", "name"},
			wantOut: "role.rbac.authorization.k8s.io/r\n", wantErr: "Warning: 'frob' is not a standard resource verb\n"},
		{name: "role without a name", args: []string{"role", "--verb=get", "--resource=pods"}, wantCode: 1,
			wantErr: "error: exactly one NAME is required, got 0\nSee 'kubectl create role -h' for help and examples\n"},
		{
			name: "cluster role with non-resource URLs",
			args: []string{"clusterrole", "c", "--verb=get", "--resource=nodes", "--non-resource-url=/logs/*", "--non-resource-url=/logs/*"},
			post: rbac + "/clusterroles", wantQuery: "fieldManager=kubectl-create&fieldValidation=Strict",
			wantBody: `{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"c"},"rules":[
				{"verbs":["get"],"apiGroups":[""],"resources":["nodes"]},{"verbs":["get"],"nonResourceURLs":["/logs/*"]}]}`,
			wantOut: "clusterrole.rbac.authorization.k8s.io/c created\n",
		},
		{
			name: "aggregated cluster role",
			args: []string{"clusterrole", "monitoring", "--aggregation-rule=rbac.example.com/aggregate-to-monitoring=true"},
			post: rbac + "/clusterroles", wantQuery: "fieldManager=kubectl-create&fieldValidation=Strict",
			wantBody: `{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"monitoring"},"rules":null,
				"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"rbac.example.com/aggregate-to-monitoring":"true"}}]}}`,
			wantOut: "clusterrole.rbac.authorization.k8s.io/monitoring created\n",
		},
		{name: "aggregation with rules", args: []string{"clusterrole", "c", "--aggregation-rule=a=b", "--verb=get"}, wantCode: 1,
			wantErr: "error: aggregation rule must be specified without nonResourceURLs, verbs, resources or resourceNames\n"},
		{name: "cluster role with neither resources nor URLs", args: []string{"clusterrole", "c", "--verb=get"}, wantCode: 1,
			wantErr: "error: one of resource or nonResourceURL must be specified\n"},
		{name: "URL verb", args: []string{"clusterrole", "c", "--verb=list", "--non-resource-url=/logs"}, wantCode: 1,
			wantErr: "error: invalid verb: 'list' for nonResourceURL\n"},
		{name: "URL without a slash", args: []string{"clusterrole", "c", "--verb=get", "--non-resource-url=logs"}, wantCode: 1,
			wantErr: "error: nonResourceURL should start with /\n"},
		{name: "URL wildcard inside", args: []string{"clusterrole", "c", "--verb=get", "--non-resource-url=/l*gs"}, wantCode: 1,
			wantErr: "error: nonResourceURL only supports wildcard matches when '*' is at the end\n"},
		{
			name: "role binding",
			args: []string{"rolebinding", "rb", "--clusterrole=view", "--user=u1", "--group=g", "--serviceaccount=team:sa", "-n", "team", "-o", "json"},
			post: rbac + "/namespaces/team/rolebindings", wantQuery: "fieldManager=kubectl-create&fieldValidation=Strict",
			wantBody: `{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"rb","namespace":"team"},"subjects":[
				{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"u1"},{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"g"},
				{"kind":"ServiceAccount","name":"sa","namespace":"team"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}}`,
			wantOut: `{
    "kind": "RoleBinding",
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "metadata": {
        "name": "rb",
        "namespace": "team",
        "uid": "u1",
        "creationTimestamp": "2026-01-02T03:04:05Z"
    },
    "subjects": [
        {
            "kind": "User",
            "apiGroup": "rbac.authorization.k8s.io",
            "name": "u1"
        },
        {
            "kind": "Group",
            "apiGroup": "rbac.authorization.k8s.io",
            "name": "g"
        },
        {
            "kind": "ServiceAccount",
            "name": "sa",
            "namespace": "team"
        }
    ],
    "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "view"
    }
}
`,
		},
		{name: "role binding to both", args: []string{"rolebinding", "rb", "--role=r", "--clusterrole=c"}, wantCode: 1,
			wantErr: "error: exactly one of clusterrole or role must be specified\n"},
		{name: "role binding to neither", args: []string{"rolebinding", "rb"}, wantCode: 1,
			wantErr: "error: exactly one of clusterrole or role must be specified\n"},
		{name: "bad service account", args: []string{"rolebinding", "rb", "--role=r", "--serviceaccount=sa"}, wantCode: 1,
			wantErr: "error: serviceaccount must be <namespace>:<name>\n"},
		{
			name: "cluster role binding",
			args: []string{"clusterrolebinding", "crb", "--clusterrole=edit", "--serviceaccount=a:b", "--dry-run=server", "-o", "name"},
			post: rbac + "/clusterrolebindings", wantQuery: "dryRun=All&fieldManager=kubectl-create&fieldValidation=Strict",
			wantBody: `{"kind":"ClusterRoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"crb"},"subjects":[
				{"kind":"ServiceAccount","name":"b","namespace":"a"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}`,
			wantOut: "clusterrolebinding.rbac.authorization.k8s.io/crb\n",
		},
		{name: "cluster role binding without a role", args: []string{"clusterrolebinding", "crb"}, wantCode: 1,
			wantErr: "error: required flag(s) \"clusterrole\" not set\n"},
		{name: "bad output", args: []string{"clusterrolebinding", "crb", "--clusterrole=c", "-o", "wide"}, wantCode: 1,
			wantErr: "error: unable to match a printer suitable for the output format \"wide\", allowed formats are: json,name,yaml\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got request
			f := &fakeAPI{routes: discoveryRoutes()}
			if tt.post != "" {
				f.routes["POST "+tt.post] = echo(&got)
			}
			out, errOut, code := run(t, f, "", append([]string{"create"}, tt.args...)...)
			if out != tt.wantOut || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut, tt.wantCode, tt.wantOut, tt.wantErr)
			}
			for _, c := range f.calls {
				if strings.HasPrefix(c, "POST ") && tt.post == "" {
					t.Errorf("sent %s, want nothing sent", c)
				}
			}
			if tt.post == "" {
				return
			}
			if got.query != tt.wantQuery {
				t.Errorf("query = %q, want %q", got.query, tt.wantQuery)
			}
			var sent, want any
			if err := json.Unmarshal(got.body, &sent); err != nil {
				t.Fatalf("body %q: %v", got.body, err)
			}
			if err := json.Unmarshal([]byte(tt.wantBody), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, sent); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCreateRBACRefused(t *testing.T) {
	exists := func(res, name string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			writeStatus(w, apierror.New(apierror.ErrAlreadyExists, "%s.rbac.authorization.k8s.io %q already exists", res, name))
		}
	}
	tests := []struct {
		name    string
		args    []string
		route   string
		reply   http.HandlerFunc
		wantErr string
	}{
		// kubectl words the bindings' refusals as its own errors and the roles' as the server's.
		{name: "role binding", args: []string{"rolebinding", "dup", "--role=r"}, route: "POST /apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
			reply: exists("rolebindings", "dup"), wantErr: "error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io \"dup\" already exists\n"},
		{name: "cluster role binding", args: []string{"clusterrolebinding", "dup", "--clusterrole=r"}, route: "POST /apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			reply: exists("clusterrolebindings", "dup"), wantErr: "error: failed to create clusterrolebinding: clusterrolebindings.rbac.authorization.k8s.io \"dup\" already exists\n"},
		{name: "role", args: []string{"role", "dup", "--verb=get", "--resource=pods"}, route: "POST /apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
			reply: exists("roles", "dup"), wantErr: "Error from server (AlreadyExists): roles.rbac.authorization.k8s.io \"dup\" already exists\n"},
		{name: "escalation", args: []string{"clusterrole", "big", "--verb=*", "--resource=*"}, route: "POST /apis/rbac.authorization.k8s.io/v1/clusterroles",
			reply: func(w http.ResponseWriter, _ *http.Request) {
				writeStatus(w, apierror.New(apierror.ErrForbidden, `clusterroles.rbac.authorization.k8s.io "big" is forbidden: user "jane" is attempting to grant RBAC permissions not currently held`))
			},
			wantErr: "Error from server (Forbidden): clusterroles.rbac.authorization.k8s.io \"big\" is forbidden: user \"jane\" is attempting to grant RBAC permissions not currently held\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{routes: discoveryRoutes()}
			f.routes[tt.route] = tt.reply
			out, errOut, code := run(t, f, "", append([]string{"create"}, tt.args...)...)
			if out != "" || errOut != tt.wantErr || code != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1, stderr %q", code, out, errOut, tt.wantErr)
			}
		})
	}
}
