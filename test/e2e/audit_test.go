package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s.io/shared/client"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	Level     string                    `json:"level"`
	AuditID   string                    `json:"auditID"`
	Stage     string                    `json:"stage"`
	Verb      string                    `json:"verb"`
	User      struct{ Username string } `json:"user"`
	ObjectRef *struct {
		Resource, Namespace, Name string
	} `json:"objectRef"`
	ResponseStatus *struct{ Code int } `json:"responseStatus"`
	RequestObject  json.RawMessage     `json:"requestObject"`
	Annotations    map[string]string   `json:"annotations"`
}

// make up's audit log records who did what: a Secret written by the admin at Metadata level
// (no body), and a node's refused write with the decision, each under the Audit-Id its answer
// carried.
func TestAuditLogOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-audit")
	home := filepath.Dir(c.kubeconfig)
	logPath := filepath.Join(home, "logs", "audit.log")

	send := func(kubeconfig, method, path, body string) (int, string) {
		t.Helper()
		cfg, err := client.FromKubeconfig(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		tlsCfg := c.target(t).TLS
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg.Clone()}}
		req, err := http.NewRequestWithContext(t.Context(), method, cfg.Server+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+cfg.Token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		id := resp.Header.Get("Audit-Id")
		if id == "" {
			t.Fatalf("%s %s: no Audit-Id header", method, path)
		}
		return resp.StatusCode, id
	}

	code, secretID := send(c.kubeconfig, "POST", "/api/v1/namespaces/"+ns+"/secrets",
		`{"metadata":{"name":"audited"},"stringData":{"password":"hunter2"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create secret: %d", code)
	}
	nodes, _ := filepath.Glob(filepath.Join(home, "kubeconfigs", "node-*.kubeconfig"))
	if len(nodes) == 0 {
		t.Fatal("no node kubeconfig under " + home)
	}
	code, nodeID := send(nodes[0], "POST", "/api/v1/namespaces", `{"metadata":{"name":"e2e-audit-by-node"}}`)
	if code != http.StatusForbidden {
		t.Fatalf("a node creating a namespace: %d, want 403", code)
	}

	var secret, refused *auditEvent
	deadline := time.Now().Add(30 * time.Second)
	for (secret == nil || refused == nil) && time.Now().Before(deadline) {
		secret, refused = findAudit(t, logPath, secretID), findAudit(t, logPath, nodeID)
		time.Sleep(200 * time.Millisecond)
	}
	if secret == nil || refused == nil {
		t.Fatalf("%s lacks the events (secret %v, refusal %v)", logPath, secret != nil, refused != nil)
	}
	if secret.User.Username != "admin" || secret.Verb != "create" || secret.Level != "Metadata" || secret.ObjectRef == nil ||
		secret.ObjectRef.Resource != "secrets" || secret.ObjectRef.Namespace != ns || secret.ResponseStatus == nil ||
		secret.ResponseStatus.Code != http.StatusCreated || secret.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("secret event %+v", secret)
	}
	if len(secret.RequestObject) != 0 {
		t.Errorf("the secret's body is in the audit log: %s", secret.RequestObject)
	}
	if !strings.HasPrefix(refused.User.Username, "system:node:") || refused.ResponseStatus == nil ||
		refused.ResponseStatus.Code != http.StatusForbidden || refused.Annotations["authorization.k8s.io/decision"] != "forbid" {
		t.Errorf("refusal event %+v", refused)
	}
}

// findAudit returns the ResponseComplete event of a request, or nil.
func findAudit(t *testing.T, path, id string) *auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		if !strings.Contains(sc.Text(), id) {
			continue
		}
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if ev.AuditID == id && ev.Stage == "ResponseComplete" {
			return &ev
		}
	}
	return nil
}
