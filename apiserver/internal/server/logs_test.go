package server

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"minik8s.io/apiserver/internal/registry"
)

// pods/<name>/log is proxied to the kubelet of the pod's node with the caller's options.
func TestPodLogProxy(t *testing.T) {
	var gotPath, gotQuery, gotAuth string
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery, gotAuth = r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization")
		if strings.HasSuffix(r.URL.Path, "/missing") {
			http.Error(w, `container "missing" in pod "p" is not available`, http.StatusNotFound)
			return
		}
		_, _ = io.WriteString(w, "line 1\nline 2\n")
	}))
	defer kubelet.Close()
	h := newHarnessWith(t, func(c *Config) {
		c.Kubelet = &KubeletClient{HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, Token: "kubelet-token"}
	})
	ns := h.namespace()
	node := "logs-" + registry.RandomSuffix()
	h.registerNode(node, strings.TrimPrefix(kubelet.URL, "https://"))
	pod := podManifest("p", nil)
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", pod, nil)

	// Not yet on a node.
	var st metav1.Status
	if code, _ := h.do("GET", "/api/v1/namespaces/"+ns+"/pods/p/log", "", nil, &st); code != 400 || !strings.Contains(st.Message, "does not have a host assigned") {
		t.Fatalf("unbound pod: %d %+v", code, st)
	}
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods/p/binding", "", map[string]any{
		"metadata": map[string]any{"name": "p"}, "target": map[string]any{"kind": "Node", "name": node}}, nil)

	req, _ := http.NewRequest("GET", h.url+"/api/v1/namespaces/"+ns+"/pods/p/log?tailLines=5&timestamps=true&follow=true", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "line 1\nline 2\n" {
		t.Fatalf("log: %d %q", resp.StatusCode, body)
	}
	if gotPath != "/containerLogs/"+ns+"/p/app" || gotAuth != "Bearer kubelet-token" {
		t.Fatalf("kubelet got %s with %q", gotPath, gotAuth)
	}
	for _, want := range []string{"tailLines=5", "timestamps=true", "follow=true"} {
		if !strings.Contains(gotQuery, want) {
			t.Errorf("query %q lacks %s", gotQuery, want)
		}
	}
	if code, _ := h.do("GET", "/api/v1/namespaces/"+ns+"/pods/p/log?container=missing", "", nil, &st); code != 404 || !strings.Contains(st.Message, "is not available") {
		t.Fatalf("missing container: %d %+v", code, st)
	}
}
