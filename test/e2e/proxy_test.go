package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
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

// proxyManifest is an echo pod (its first declared port 8080, named http), a Service in front
// of it on port 80, a Service that selects nothing, and two users' bindings in the namespace:
// one may view, the other edit.
const proxyManifest = `apiVersion: v1
kind: Pod
metadata:
  name: echo
  labels: {app: proxy-echo}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: echo
    image: minik8s/echo:1.0
    imagePullPolicy: IfNotPresent
    ports:
    - {name: http, containerPort: 8080}
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    readinessProbe:
      httpGet: {path: /healthz, port: http}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: echo
spec:
  selector: {app: proxy-echo}
  ports:
  - {name: http, port: 80, targetPort: http}
---
apiVersion: v1
kind: Service
metadata:
  name: nobody
spec:
  selector: {app: proxy-nobody}
  ports:
  - {name: http, port: 80}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: viewer
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-proxy-viewer}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: editor
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-proxy-editor}
`

// echoReply is what the echo workload answers.
type echoReply struct {
	PodName string              `json:"podName"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Headers map[string][]string `json:"headers"`
}

// On make up, with the real kubectl and ours: kubectl proxy on a port it picks reaches an echo
// Service, by port number, port name and with a scheme, and its pod, through the apiserver's
// services/proxy and pods/proxy, with the method, path and query arriving unchanged and the
// caller's credentials not at all; `get --raw` reaches the node's kubelet through nodes/proxy
// (metrics with the echo container's usage, the stats summary, health); a Service without
// endpoints is Kubernetes' 503; and RBAC splits as in Kubernetes: view may not proxy, edit may
// proxy to pods and Services but not to nodes.
func TestProxySubresourcesOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	ns := c.namespace(t, "e2e-proxy")
	ks := c.kubectls(t)
	file := filepath.Join(t.TempDir(), "proxy.yaml")
	writeFile(t, file, proxyManifest)
	ks[0].ok(t, "-n", ns, "apply", "-f", file)
	pod := c.waitPodRunning(t, ns, "echo")
	endpoints := client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](c.cl)
	eventually(t, 2*time.Minute, "the echo Service's endpoint ready", func() bool {
		ep, err := endpoints.Get(t.Context(), ns, "echo", metav1.GetOptions{})
		return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1
	})
	base := "/api/v1/namespaces/" + ns

	for _, k := range ks {
		t.Run("kubectl proxy/"+k.name, func(t *testing.T) {
			addr := startKubectlProxy(t, k)
			for _, tc := range []struct {
				method, path, body string
				want               echoReply
			}{
				{"GET", base + "/services/echo:80/proxy/hello?x=1&y=a%2Fb", "", echoReply{Method: "GET", Path: "/hello", Query: "x=1&y=a%2Fb"}},
				{"GET", base + "/services/echo:http/proxy/a/b/", "", echoReply{Method: "GET", Path: "/a/b/"}},
				{"GET", base + "/services/http:echo:80/proxy/", "", echoReply{Method: "GET", Path: "/"}},
				{"POST", base + "/services/echo:80/proxy/submit", "payload", echoReply{Method: "POST", Path: "/submit"}},
				{"GET", base + "/pods/echo/proxy/p?q=2", "", echoReply{Method: "GET", Path: "/p", Query: "q=2"}},
				{"DELETE", base + "/pods/echo:8080/proxy/", "", echoReply{Method: "DELETE", Path: "/"}},
			} {
				req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://"+addr+tc.path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				code, body, _ := httpDo(t, req)
				var got echoReply
				if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil {
					t.Errorf("%s %s through kubectl proxy: %d %s", tc.method, tc.path, code, body)
					continue
				}
				if got.PodName != "echo" || got.Method != tc.want.Method || got.Path != tc.want.Path || got.Query != tc.want.Query {
					t.Errorf("%s %s: the pod saw %s %s?%s (pod %q), want %s %s?%s", tc.method, tc.path,
						got.Method, got.Path, got.Query, got.PodName, tc.want.Method, tc.want.Path, tc.want.Query)
				}
				if auth := got.Headers["Authorization"]; len(auth) > 0 {
					t.Errorf("%s %s: the pod was sent the caller's credentials %q", tc.method, tc.path, auth)
				}
				prefix, _, _ := strings.Cut(tc.path, "/proxy/")
				if fwd := got.Headers["X-Forwarded-Uri"]; len(fwd) != 1 || !strings.HasPrefix(fwd[0], prefix+"/proxy/") {
					t.Errorf("%s %s: X-Forwarded-Uri %q", tc.method, tc.path, fwd)
				}
			}

			// The root of a backend without its slash is redirected to it, through the proxy.
			req, _ := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+base+"/services/echo:80/proxy", nil)
			if code, _, h := httpDo(t, req); code != http.StatusMovedPermanently || h.Get("Location") != base+"/services/echo:80/proxy/" {
				t.Errorf("the root without a slash: %d to %q", code, h.Get("Location"))
			}
			// Kubernetes' Status for a Service with nowhere to go comes back through the proxy.
			req, _ = http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+base+"/services/nobody:80/proxy/", nil)
			code, body, _ := httpDo(t, req)
			var st metav1.Status
			if err := json.Unmarshal(body, &st); err != nil || code != http.StatusServiceUnavailable || st.Reason != metav1.StatusReasonServiceUnavailable ||
				st.Message != `no endpoints available for service "nobody"` {
				t.Errorf("a Service without endpoints: %d %s", code, body)
			}
			// kubectl proxy's own filter keeps exec out.
			req, _ = http.NewRequestWithContext(t.Context(), "POST", "http://"+addr+base+"/pods/echo/exec?command=true&stdout=true", nil)
			if code, body, _ := httpDo(t, req); code != http.StatusForbidden || string(body) != "Forbidden\n" {
				t.Errorf("exec through kubectl proxy: %d %q, want the filter's 403", code, body)
			}
		})
	}

	for _, k := range ks {
		t.Run("nodes proxy/"+k.name, func(t *testing.T) {
			node := "/api/v1/nodes/" + pod.Spec.NodeName + "/proxy"
			// The kubelet reports the echo container's usage once it has sampled it.
			metric := regexp.MustCompile(`(?m)^container_cpu_usage_seconds_total\{container="echo",namespace="` + regexp.QuoteMeta(ns) + `",pod="echo"\} `)
			var last result
			eventually(t, 2*time.Minute, "the kubelet's resource metrics through nodes/proxy to show the echo container", func() bool {
				last = k.run(t, "get", "--raw", node+"/metrics/resource")
				return last.err == nil && metric.MatchString(last.stdout)
			})
			if !strings.Contains(last.stdout, "# TYPE container_cpu_usage_seconds_total counter") {
				t.Errorf("metrics without their TYPE lines:\n%s", last.stdout)
			}
			var summary struct {
				Node struct {
					NodeName string `json:"nodeName"`
				} `json:"node"`
				Pods []struct {
					PodRef struct{ Name, Namespace string } `json:"podRef"`
				} `json:"pods"`
			}
			// A summary fails while a container of another test's pod goes away under the
			// kubelet's sampling; the next one answers.
			eventually(t, time.Minute, "the kubelet's stats summary through nodes/proxy", func() bool {
				last = k.run(t, "get", "--raw", node+"/stats/summary")
				return last.err == nil
			})
			out := last.stdout
			if err := json.Unmarshal([]byte(out), &summary); err != nil || summary.Node.NodeName != pod.Spec.NodeName {
				t.Fatalf("stats summary through nodes/proxy: %v\n%s", err, out)
			}
			found := false
			for _, p := range summary.Pods {
				found = found || (p.PodRef.Namespace == ns && p.PodRef.Name == "echo")
			}
			if !found {
				t.Errorf("the stats summary lacks the echo pod:\n%s", out)
			}
			if out := k.ok(t, "get", "--raw", node+"/healthz").stdout; out != "ok" {
				t.Errorf("healthz through nodes/proxy: %q", out)
			}
		})
	}

	for _, k := range ks {
		t.Run("errors and RBAC/"+k.name, func(t *testing.T) {
			r := k.run(t, "get", "--raw", base+"/services/nobody:80/proxy/")
			if want := `Error from server (ServiceUnavailable): no endpoints available for service "nobody"`; r.err == nil || !strings.Contains(r.stderr, want) {
				t.Errorf("a Service without endpoints:\n%s\nwant %q", r, want)
			}
			r = k.run(t, "get", "--raw", base+"/pods/absent/proxy/")
			if want := `Error from server (NotFound): pods "absent" not found`; r.err == nil || !strings.Contains(r.stderr, want) {
				t.Errorf("no such pod:\n%s\nwant %q", r, want)
			}
			// The editor's binding is in the authorizer's cache once its proxy goes through.
			for deadline := time.Now().Add(time.Minute); ; {
				r = k.run(t, "--as", "e2e-proxy-editor", "get", "--raw", base+"/services/echo:80/proxy/by-editor")
				var got echoReply
				if r.err == nil && json.Unmarshal([]byte(r.stdout), &got) == nil && got.Path == "/by-editor" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the editor through services/proxy:\n%s", r)
				}
				sleep(t, time.Second)
			}
			k.ok(t, "--as", "e2e-proxy-editor", "get", "--raw", base+"/pods/echo/proxy/")
			for _, tc := range []struct{ user, path, want string }{
				{"e2e-proxy-viewer", base + "/services/echo:80/proxy/",
					`services "echo:80" is forbidden: User "e2e-proxy-viewer" cannot get resource "services/proxy" in API group "" in the namespace "` + ns + `"`},
				{"e2e-proxy-viewer", base + "/pods/echo/proxy/",
					`pods "echo" is forbidden: User "e2e-proxy-viewer" cannot get resource "pods/proxy" in API group "" in the namespace "` + ns + `"`},
				{"e2e-proxy-editor", "/api/v1/nodes/" + pod.Spec.NodeName + "/proxy/healthz",
					`nodes "` + pod.Spec.NodeName + `" is forbidden: User "e2e-proxy-editor" cannot get resource "nodes/proxy" in API group "" at the cluster scope`},
			} {
				r := k.run(t, "--as", tc.user, "get", "--raw", tc.path)
				if r.err == nil || !strings.Contains(r.stderr, "Error from server (Forbidden): "+tc.want) {
					t.Errorf("%s get --raw %s:\n%s\nwant %q", tc.user, tc.path, r, tc.want)
				}
			}
		})
	}
}

// httpDo sends req without following redirects and returns the answer.
func httpDo(t *testing.T, req *http.Request) (int, []byte, http.Header) {
	t.Helper()
	cl := &http.Client{Timeout: commandTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, body, resp.Header
}
