package ingress

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The tests here run the real nginx of minik8s/nginx in Docker: the golden configurations must
// be ones nginx accepts, and a delivery (DeliverScript, what the controller runs over pods/exec)
// under load must not drop a request. They need Docker and skip only under -short.

func requireNginxImage(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Docker and the minik8s/nginx image (-short)")
	}
	if out, err := exec.CommandContext(t.Context(), "docker", "info").CombinedOutput(); err != nil {
		t.Fatalf("docker does not answer (make up starts it): %v\n%s", err, out)
	}
	if exec.CommandContext(t.Context(), "docker", "image", "inspect", DefaultImage).Run() == nil {
		return
	}
	// Build it as make images would.
	gowork, err := exec.CommandContext(t.Context(), "go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(gowork)) == "" {
		t.Fatalf("%s is missing and the repository's scripts/images.sh cannot be found (go env GOWORK: %v)", DefaultImage, err)
	}
	script := filepath.Join(filepath.Dir(strings.TrimSpace(string(gowork))), "scripts", "images.sh")
	t.Logf("%s is missing: %s --if-missing nginx", DefaultImage, script)
	if out, err := exec.CommandContext(t.Context(), script, "--if-missing", "nginx").CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", DefaultImage, err, out)
	}
}

func docker(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "docker", args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

// TestGoldenConfigsPassNginx runs nginx -t over every golden configuration in the image.
func TestGoldenConfigsPassNginx(t *testing.T) {
	requireNginxImage(t)
	confs, err := filepath.Glob("testdata/*.conf")
	if err != nil || len(confs) == 0 {
		t.Fatalf("no golden configurations (%v)", err)
	}
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, c := range confs {
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.Base(c), Mode: 0o644, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	out := docker(t, &archive, "run", "-i", "--rm", "--network", "none", DefaultImage, "sh", "-c",
		`mkdir /t && tar -x -C /t && for f in /t/*.conf; do nginx -t -q -c "$f" || { echo "nginx refused $f"; exit 1; }; echo "accepted $f"; done`)
	if got := strings.Count(out, "accepted "); got != len(confs) {
		t.Errorf("nginx accepted %d of %d configurations:\n%s", got, len(confs), out)
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runContainer starts a container and removes it when the test ends.
func runContainer(t *testing.T, args ...string) string {
	t.Helper()
	id := docker(t, nil, append([]string{"run", "-d", "--name", "minik8s-test-ingress-" + randomSuffix()}, args...)...)
	t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	return id
}

// TestReloadUnderLoadDropsNothing delivers three configurations, one after another, to an nginx
// serving a steady stream of slow requests (each takes about a quarter second, so some are
// always in flight when a reload happens), and checks that every request succeeded and that
// each reload took effect.
func TestReloadUnderLoadDropsNothing(t *testing.T) {
	requireNginxImage(t)
	const blob = 64 << 10
	backend := runContainer(t, DefaultImage, "sh", "-c", fmt.Sprintf(
		`mkdir -p /srv && head -c %d /dev/zero > /srv/blob && printf '%%s' 'events {} http { server { listen 8080; location / { root /srv; try_files /blob =404; limit_rate 256k; } } }' > /b.conf && exec nginx -g 'daemon off;' -c /b.conf`, blob))
	backendIP := docker(t, nil, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", backend)
	front := runContainer(t, "-p", "127.0.0.1::80", DefaultImage)
	addr := docker(t, nil, "port", front, "80/tcp")
	if i := strings.Index(addr, "\n"); i >= 0 {
		addr = addr[:i]
	}

	services := func(ns, name string) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: backendIP, Ports: []corev1.ServicePort{{Port: 8080}}}}
	}
	prefix := networkingv1.PathTypePrefix
	// config n serves / and /v1 ... /v<n>.
	config := func(n int) []byte {
		var paths []networkingv1.HTTPIngressPath
		for i := 0; i <= n; i++ {
			p := "/"
			if i > 0 {
				p = fmt.Sprintf("/v%d", i)
			}
			paths = append(paths, networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "backend", Port: networkingv1.ServiceBackendPort{Number: 8080}}}})
		}
		routes, problems := Resolve([]*networkingv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "load"},
			Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "load.example",
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}}}}}, services)
		if len(problems) > 0 {
			t.Fatalf("problems: %v", problems)
		}
		return Render(routes)
	}
	deliver := func(n int) {
		t.Helper()
		docker(t, bytes.NewReader(config(n)), append([]string{"exec", "-i", front}, DeliverCommand...)...)
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	get := func(ctx context.Context, path string) (int, int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return 0, 0, err
		}
		req.Host = "load.example"
		resp, err := hc.Do(req)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, int(n), err
	}
	// waitServed waits until path answers 200 with the whole blob: that reload took effect.
	waitServed := func(path string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, n, err := get(t.Context(), path)
			if err == nil && code == http.StatusOK && n == blob {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not served after 60s: %d, %d bytes, %v", path, code, n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	deliver(0)
	waitServed("/")

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var ok, failed atomic.Int64
	var mu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ { // bounded, whatever happens
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				code, n, err := get(ctx, fmt.Sprintf("/item/%d/%d", w, i))
				if err == nil && code == http.StatusOK && n == blob {
					ok.Add(1)
					continue
				}
				failed.Add(1)
				mu.Lock()
				failures = append(failures, fmt.Sprintf("status %d, %d bytes, %v", code, n, err))
				mu.Unlock()
			}
		}()
	}
	time.Sleep(time.Second)
	for n := 1; n <= 2; n++ {
		before := ok.Load()
		deliver(n)
		waitServed(fmt.Sprintf("/v%d", n))
		// Let requests started on the new workers overlap the next reload too.
		for ok.Load() < before+16 && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("%d requests succeeded, %d failed, across two reloads", ok.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d requests failed during reloads, e.g. %v", failed.Load(), failures[:min(len(failures), 5)])
	}
	if ok.Load() < 40 {
		t.Errorf("only %d requests ran: the load did not overlap the reloads", ok.Load())
	}
	// Both reloads are in the error log nginx writes to the container's stderr.
	logs, err := exec.CommandContext(t.Context(), "docker", "logs", front).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(logs), "(SIGHUP) received"); n != 3 {
		t.Errorf("nginx logged %d reconfigurations, want 3 (one per delivery)", n)
	}
}
