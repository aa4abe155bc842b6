package e2e

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestProxySubresources goes through `kubectl proxy` of the real kubectl and ours to a pod on
// a real kubelet (Docker, CNI) by pods/<name>/proxy and services/<name>:<port>/proxy, the
// service resolved through its Endpoints to the pod's IP, reads the kubelet's metrics, health
// and stats summary by nodes/<name>/proxy, and sees a user without the verb refused.
func TestProxySubresources(t *testing.T) {
	n := startNode(t)
	n.applyTemplate(t, "proxy-pods.yaml")
	pod := n.waitPod(t, "web", "running and ready", podRunning)

	// What the endpoints controller writes for a selector, written here for a Service
	// without one; the address names its pod, as the apiserver proxies only to a pod's IP.
	eps := filepath.Join(t.TempDir(), "endpoints.yaml")
	if err := os.WriteFile(eps, []byte("apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: web\n  namespace: "+n.ns+
		"\nsubsets:\n- addresses:\n  - ip: "+pod.Status.PodIP+"\n    targetRef: {kind: Pod, namespace: "+n.ns+", name: web}"+
		"\n  ports:\n  - name: http\n    port: 8080\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.kubectlReal.ok(t, "apply", "-f", eps)

	base := "/api/v1/namespaces/" + n.ns
	for _, k := range []kubectl{n.kubectlReal, n.kubectl} {
		t.Run(k.name, func(t *testing.T) {
			addr := startKubectlProxy(t, k)
			for _, tc := range []struct{ path, want string }{
				{base + "/pods/web/proxy/index.html", "hello from web\n"},
				{base + "/pods/web:8080/proxy/dir/", "in dir\n"},
				{base + "/services/web:http/proxy/index.html", "hello from web\n"},
				{base + "/services/http:web:80/proxy/dir/index.html", "in dir\n"},
			} {
				if body := httpGet(t, "http://"+addr+tc.path); body != tc.want {
					t.Errorf("GET %s through kubectl proxy: %q, want %q", tc.path, body, tc.want)
				}
			}
			// The Service's only port is named, so naming none finds no endpoint port.
			if code, body := httpAnswer(t, "http://"+addr+base+"/services/web/proxy/"); code != http.StatusServiceUnavailable ||
				!strings.Contains(body, `no endpoints available for service \"web\"`) {
				t.Errorf("service without its port named: %d %s", code, body)
			}

			metrics := k.ok(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/metrics").stdout
			if want := `kubelet_node_name{node="` + n.name + `"} 1`; !strings.Contains(metrics, want) {
				t.Errorf("kubelet metrics through nodes/proxy lack %s:\n%.2000s", want, metrics)
			}
			if got := k.ok(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/healthz").stdout; got != "ok" {
				t.Errorf("kubelet healthz through nodes/proxy: %q", got)
			}
			if got := k.ok(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/stats/summary").stdout; !strings.Contains(got, `"nodeName": "`+n.name+`"`) &&
				!strings.Contains(got, `"nodeName":"`+n.name+`"`) {
				t.Errorf("kubelet stats summary through nodes/proxy:\n%.2000s", got)
			}

			r := k.run(t, "get", "--raw", base+"/pods/web/proxy/index.html", "--as=jane")
			if r.err == nil || !strings.Contains(r.stderr, `pods "web" is forbidden: User "jane" cannot get resource "pods/proxy" in API group "" in the namespace "`+n.ns+`"`) {
				t.Errorf("a user without get on pods/proxy:\n%s", r)
			}
			r = k.run(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/metrics", "--as=jane")
			if r.err == nil || !strings.Contains(r.stderr, `nodes "`+n.name+`" is forbidden: User "jane" cannot get resource "nodes/proxy"`) {
				t.Errorf("a user without get on nodes/proxy:\n%s", r)
			}
		})
	}
}

var servingOn = regexp.MustCompile(`Starting to serve on (127\.0\.0\.1:\d+)`)

// startKubectlProxy runs `kubectl proxy --port 0` until the test ends and returns the address
// it serves on.
func startKubectlProxy(t *testing.T, k kubectl) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := k.command(ctx, "proxy", "--port", "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var seen []string
		for sc.Scan() {
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				_, _ = io.Copy(io.Discard, out)
				return
			}
			seen = append(seen, sc.Text())
		}
		found <- "exited: " + strings.Join(seen, "\n")
	}()
	select {
	case a := <-found:
		if strings.HasPrefix(a, "exited: ") {
			t.Fatalf("%s kubectl proxy %s", k.name, a)
		}
		return a
	case <-time.After(streamWait):
		t.Fatalf("%s kubectl proxy did not say where it serves within %s", k.name, streamWait)
		return ""
	}
}

// httpAnswer fetches url from the host and returns the status code and body; it fails the
// test when url cannot be reached.
func httpAnswer(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}
