package server

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/access"
	"minik8s.io/apiserver/internal/audit"
	"minik8s.io/apiserver/internal/bootstrappolicy"
	"minik8s.io/shared/informer"
)

// accessHarness is a server with authorization on, the admin token, and users alice (in
// system:authenticated only) and node n1; its audit log records everything at Metadata.
func accessHarness(t *testing.T) (*harness, string) {
	t.Helper()
	auditPath := filepath.Join(t.TempDir(), "audit.log")
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := audit.NewLog(audit.LogOptions{Path: auditPath}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = log.Close() })
	h := newHarnessWith(t, func(cfg *Config) {
		cfg.Authenticator = func(_ context.Context, tok string) (Identity, bool) {
			switch tok {
			case testToken:
				return Identity{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}, true
			case "alice":
				return Identity{Name: "alice", Groups: []string{"system:authenticated"}}, true
			case "node":
				return Identity{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}, true
			}
			return Identity{}, false
		}
		cfg.NewAccess = func(src informer.Source) Access {
			return access.New(access.Config{Source: src, NodeRules: bootstrappolicy.NodeRules()})
		}
		cfg.Audit = &Audit{Policy: policy, Log: log}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.srv.Access().Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	// The default policy, as the apiserver reconciles it at start.
	for _, r := range bootstrappolicy.ClusterRoles() {
		h.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "application/json", r, nil)
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		h.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "application/json", b, nil)
	}
	h.eventually("the default policy in the caches", func() bool {
		var raw json.RawMessage
		if h.as("alice", "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", `{"spec":{"namespace":"default"}}`, &raw) != http.StatusCreated {
			return false
		}
		var r authorizationv1.SelfSubjectRulesReview
		return json.Unmarshal(raw, &r) == nil && r.Status.EvaluationError == "" && len(r.Status.NonResourceRules) > 0
	})
	return h, auditPath
}

// as sends a request with another token and decodes the answer.
func (h *harness) as(token, method, path, body string, out any, headers ...string) int {
	h.t.Helper()
	headers = append([]string{"Authorization", "Bearer " + token, "Content-Type", "application/json"}, headers...)
	resp, data := h.send(method, path, []byte(body), headers...)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			h.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

func TestAuthorization(t *testing.T) {
	h, auditPath := accessHarness(t)
	ns := h.namespace()
	pods := "/api/v1/namespaces/" + ns + "/pods"

	var st metav1.Status
	if code := h.as("alice", "GET", pods, "", &st); code != http.StatusForbidden ||
		st.Message != `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "`+ns+`"` {
		t.Fatalf("alice lists pods before any grant: %d %q", code, st.Message)
	}
	if code := h.as("node", "POST", "/api/v1/namespaces", `{"metadata":{"name":"by-node"}}`, &st); code != http.StatusForbidden ||
		st.Message != `namespaces is forbidden: User "system:node:n1" cannot create resource "namespaces" in API group "" at the cluster scope` {
		t.Fatalf("a node creates a namespace: %d %q", code, st.Message)
	}

	// Grant alice pod reading in ns; the cache follows.
	h.mustDo(http.StatusCreated, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles", "application/json",
		`{"metadata":{"name":"pod-reader"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list","watch"]}]}`, nil)
	h.mustDo(http.StatusCreated, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", "application/json",
		`{"metadata":{"name":"alice"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"pod-reader"},"subjects":[{"kind":"User","name":"alice"}]}`, nil)
	h.eventually("alice may list pods", func() bool { return h.as("alice", "GET", pods, "", nil) == http.StatusOK })
	if code := h.as("alice", "GET", "/api/v1/namespaces/"+ns+"/secrets", "", nil); code != http.StatusForbidden {
		t.Fatalf("alice lists secrets: %d", code)
	}

	// Access reviews say the same.
	var sar authorizationv1.SelfSubjectAccessReview
	h.as("alice", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		`{"spec":{"resourceAttributes":{"namespace":"`+ns+`","verb":"list","resource":"pods"}}}`, &sar)
	if !sar.Status.Allowed || !strings.Contains(sar.Status.Reason, `RoleBinding "alice/`) && !strings.Contains(sar.Status.Reason, `"alice"`) {
		t.Fatalf("self review of listing pods: %+v", sar.Status)
	}
	h.as("alice", "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		`{"spec":{"resourceAttributes":{"namespace":"`+ns+`","verb":"list","resource":"secrets"}}}`, &sar)
	if sar.Status.Allowed {
		t.Fatalf("self review of listing secrets: %+v", sar.Status)
	}
	var sr authorizationv1.SubjectAccessReview
	h.mustDo(http.StatusCreated, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json",
		`{"spec":{"user":"alice","resourceAttributes":{"namespace":"`+ns+`","verb":"get","resource":"pods","name":"x"}}}`, &sr)
	if !sr.Status.Allowed {
		t.Fatalf("subject review for alice: %+v", sr.Status)
	}
	if code := h.as("alice", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", `{"spec":{"user":"alice","nonResourceAttributes":{"path":"/x","verb":"get"}}}`, nil); code != http.StatusForbidden {
		t.Fatalf("alice may not review others: %d", code)
	}
	var rules authorizationv1.SelfSubjectRulesReview
	h.as("alice", "POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", `{"spec":{"namespace":"`+ns+`"}}`, &rules)
	found := false
	for _, r := range rules.Status.ResourceRules {
		found = found || (len(r.Resources) == 1 && r.Resources[0] == "pods" && strings.Join(r.Verbs, ",") == "get,list,watch")
	}
	if !found {
		t.Fatalf("rules review lacks the pods rule: %+v", rules.Status)
	}

	// Escalation: alice may write roles in ns but not grant what she lacks.
	h.mustDo(http.StatusCreated, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles", "application/json",
		`{"metadata":{"name":"role-writer"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["roles"],"verbs":["create"]}]}`, nil)
	h.mustDo(http.StatusCreated, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", "application/json",
		`{"metadata":{"name":"alice-writes"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"role-writer"},"subjects":[{"kind":"User","name":"alice"}]}`, nil)
	h.eventually("alice may create roles", func() bool {
		return h.as("alice", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles",
			`{"metadata":{"name":"readers-too"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`, nil) == http.StatusCreated
	})
	code := h.as("alice", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles",
		`{"metadata":{"name":"secret-reader"},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`, &st)
	if code != http.StatusForbidden || !strings.Contains(st.Message, `roles.rbac.authorization.k8s.io "secret-reader" is forbidden: user "alice"`) ||
		!strings.Contains(st.Message, "is attempting to grant RBAC permissions not currently held") {
		t.Fatalf("escalation: %d %q", code, st.Message)
	}
	if code := h.as(testToken, "GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/roles/secret-reader", "", nil); code != http.StatusNotFound {
		t.Fatalf("the refused role was stored: %d", code)
	}

	// Impersonation: admin may act as alice, alice may not act as anyone.
	if code := h.as(testToken, "GET", "/api/v1/namespaces/"+ns+"/secrets", "", nil, "Impersonate-User", "alice"); code != http.StatusForbidden {
		t.Fatalf("admin as alice lists secrets: %d", code)
	}
	if code := h.as(testToken, "GET", pods, "", nil, "Impersonate-User", "alice"); code != http.StatusOK {
		t.Fatalf("admin as alice lists pods: %d", code)
	}
	if code := h.as("alice", "GET", pods, "", &st, "Impersonate-User", "bob"); code != http.StatusForbidden ||
		st.Message != `users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope` {
		t.Fatalf("alice as bob: %d %q", code, st.Message)
	}

	// Revoking the binding takes the grant away.
	h.mustDo(http.StatusOK, "DELETE", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings/alice", "", nil, nil)
	h.eventually("alice may no longer list pods", func() bool { return h.as("alice", "GET", pods, "", nil) == http.StatusForbidden })

	// The audit log has who was refused what, with the decision and the Audit-Id sent.
	resp, _ := h.send("GET", "/api/v1/namespaces/"+ns+"/configmaps", nil, "Authorization", "Bearer alice")
	id := resp.Header.Get("Audit-Id")
	if id == "" {
		t.Fatal("no Audit-Id header")
	}
	h.eventually("the refusal is in the audit log", func() bool {
		ev, ok := findEvent(t, auditPath, id, audit.StageResponseComplete)
		if !ok {
			return false
		}
		if ev.User.Username != "alice" || ev.Verb != "list" || ev.ObjectRef == nil || ev.ObjectRef.Resource != "configmaps" ||
			ev.ObjectRef.Namespace != ns || ev.ResponseStatus == nil || ev.ResponseStatus.Code != http.StatusForbidden ||
			ev.Annotations["authorization.k8s.io/decision"] != "forbid" || ev.Level != audit.LevelMetadata || len(ev.RequestObject) != 0 {
			t.Fatalf("audit event %+v", ev)
		}
		return true
	})

	// An Audit-ID the client sends is the one answered and logged.
	resp, _ = h.send("GET", "/api/v1/namespaces/"+ns+"/pods", nil, "Authorization", "Bearer "+testToken, "Audit-ID", "client-chosen-id")
	if got := resp.Header.Get("Audit-Id"); got != "client-chosen-id" {
		t.Fatalf("Audit-Id %q, want the client's", got)
	}
	h.eventually("the client's Audit-ID is in the audit log", func() bool {
		_, ok := findEvent(t, auditPath, "client-chosen-id", audit.StageResponseComplete)
		return ok
	})
}

func findEvent(t *testing.T, path, id string, stage audit.Stage) (audit.Event, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return audit.Event{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev audit.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Bytes(), err)
		}
		if string(ev.AuditID) == id && ev.Stage == stage {
			return ev, true
		}
	}
	return audit.Event{}, false
}
