package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/runtime/runtimetest"
)

// apiserverStandIn answers what kubectl asks before it streams (discovery and pod default/web)
// and proxies pods/exec, pods/attach and pods/portforward to the kubelet at kubeletURL with
// the upgrade passed through, translating the query as the apiserver does.
func apiserverStandIn(t *testing.T, k kubelet, transport http.RoundTripper) string {
	ku, _ := url.Parse(k.url)
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "app", Image: "helper"}, {Name: "attach", Image: "helper", Stdin: true, StdinOnce: true}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "attach", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	hs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		const podPath = "/api/v1/namespaces/default/pods/web"
		switch p := r.URL.Path; {
		case p == "/api":
			_, _ = io.WriteString(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"x"}]}`)
		case p == "/apis":
			_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
		case p == "/api/v1":
			_, _ = io.WriteString(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get"]}]}`)
		case p == podPath:
			_ = json.NewEncoder(w).Encode(pod)
		case strings.HasPrefix(p, podPath+"/"):
			sub, q, out := strings.TrimPrefix(p, podPath+"/"), r.URL.Query(), url.Values{}
			path := "/portForward/default/web"
			if sub != "portforward" {
				for from, to := range map[string]string{"stdin": "input", "stdout": "output", "stderr": "error", "tty": "tty"} {
					if q.Get(from) == "true" {
						out.Set(to, "1")
					}
				}
				out["command"] = q["command"]
				path = "/" + sub + "/default/web/" + q.Get("container")
			}
			target := *ku
			target.Path, target.RawQuery = path, out.Encode()
			proxy := &httputil.ReverseProxy{Transport: transport, Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL, pr.Out.Host = &target, target.Host
				pr.Out.Header.Set("Authorization", "Bearer good")
			}}
			proxy.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	err := os.WriteFile(kubeconfig, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
`, hs.URL), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

func kubectlPath(t *testing.T) string {
	path, err := exec.LookPath("kubectl")
	if err != nil {
		if testing.Short() {
			t.Skip("needs kubectl; skipped under -short")
		}
		t.Fatalf("kubectl is not installed (%v): install it, or run with -short", err)
	}
	return path
}

// TestKubectl drives the real kubectl through a proxy like the apiserver's: it picks
// WebSockets (v5 for exec and attach, the SPDY tunnel for port-forward) on its own.
func TestKubectl(t *testing.T) {
	kubectl := kubectlPath(t)
	b, _ := fakeBackend(t)
	k := serve(t, b)
	kubeconfig := apiserverStandIn(t, k, insecureTransport())
	run := func(t *testing.T, stdin string, args ...string) outcomeCode {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = time.Second
		err := cmd.Run()
		if ctx.Err() != nil {
			t.Fatalf("kubectl %q did not end within %s; stdout %q, stderr %q", args, wait, stdout.String(), stderr.String())
		}
		code := 0
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			code = exitErr.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl %q: %v", args, err)
		}
		return outcomeCode{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
	}
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  outcomeCode
	}{
		{"exec", "", []string{"exec", "web", "-c", "app", "--", runtimetest.HelperPath, "print", "out", "eprint", "err"},
			outcomeCode{Stdout: "out\n", Stderr: "err\n"}},
		{"exec exit code", "", []string{"exec", "web", "-c", "app", "--", runtimetest.HelperPath, "exit", "3"},
			outcomeCode{Stderr: "command terminated with exit code 3\n", Code: 3}},
		{"exec stdin", "hello\nworld\n", []string{"exec", "-i", "web", "-c", "app", "--", runtimetest.HelperPath, "cat"},
			outcomeCode{Stdout: "hello\nworld\n"}},
		{"attach stdin", "ping\n", []string{"attach", "-i", "web", "-c", "attach", "-q"},
			outcomeCode{Stdout: "ping\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, run(t, tc.stdin, tc.args...)); diff != "" {
				t.Errorf("kubectl %q (-want +got):\n%s", tc.args, diff)
			}
		})
	}
	t.Run("port-forward", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), wait)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "port-forward", "pod/web", ":9000")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.WaitDelay = time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		line, err := bufio.NewReader(stdout).ReadString('\n')
		m := regexp.MustCompile(`^Forwarding from (127\.0\.0\.1:\d+) -> 9000`).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("kubectl port-forward said %q, %v; want Forwarding from 127.0.0.1:<port> -> 9000", line, err)
		}
		c := dialLocal(t, m[1])
		if _, err := io.WriteString(c, "ping\n"); err != nil {
			t.Fatal(err)
		}
		if got, err := bufio.NewReader(c).ReadString('\n'); got != "ping\n" {
			t.Errorf("echo through kubectl port-forward = %q, %v; want %q", got, err, "ping\n")
		}
	})
}

type outcomeCode struct {
	Stdout, Stderr string
	Code           int
}

// insecureTransport reaches the kubelet as the apiserver does: its serving certificate is not
// verified, and with a TLS config of its own the transport speaks HTTP/1.1, which upgrades need.
func insecureTransport() http.RoundTripper {
	return &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // a test server
		DialContext:     (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	}
}
