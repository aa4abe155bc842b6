package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// helloFunction is the Function the dashboard test deploys and calls.
const helloFunction = `apiVersion: serverless.minik8s.io/v1
kind: Function
metadata:
  name: hello
spec:
  handler: main.handle
  source:
    main.py: |
      def handle(event):
          return {"hello": event.get("name", "world")}
`

// browser loads the dashboard's pages in headless Chromium (Debian's chromium, which make up
// installs with the monitoring stack), letting their scripts run for a while of virtual time.
type browser struct {
	t        *testing.T
	base     string
	profile  string
	shotsDir string
}

func (b browser) args(extra ...string) []string {
	return append([]string{"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir=" + b.profile, "--window-size=1400,1000", "--virtual-time-budget=10000"}, extra...)
}

// dom returns the page's DOM after its scripts drew the plots (Chromium's complaints on
// stderr, about D-Bus and the like, are left out).
func (b browser) dom(path string) (string, error) {
	ctx, cancel := context.WithTimeout(b.t.Context(), commandTimeout)
	defer cancel()
	argv := b.args("--dump-dom", b.base+path)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return "", fmt.Errorf("chromium --dump-dom %s: %w", path, err)
	}
	return string(out), nil
}

// screenshot saves the page as name.png in the test's screenshot folder.
func (b browser) screenshot(name, path string) {
	file := filepath.Join(b.shotsDir, name+".png")
	if _, err := execErr(b.t.Context(), b.args("--screenshot="+file, b.base+path)...); err != nil {
		b.t.Errorf("screenshot of %s: %v", path, err)
		return
	}
	if st, err := os.Stat(file); err != nil || st.Size() == 0 {
		b.t.Errorf("screenshot of %s: no picture in %s (%v)", path, file, err)
	}
}

// plotState reads what the page's script wrote on a plot's canvas: its state and how many
// points it drew.
func plotState(dom, id string) (string, int) {
	tag := regexp.MustCompile(`<canvas[^>]*id="` + regexp.QuoteMeta(id) + `"[^>]*>`).FindString(dom)
	state := regexp.MustCompile(`data-state="([^"]*)"`).FindStringSubmatch(tag)
	points := regexp.MustCompile(`data-points="(\d+)"`).FindStringSubmatch(tag)
	if state == nil {
		return "", 0
	}
	n := 0
	if points != nil {
		n, _ = strconv.Atoi(points[1])
	}
	return state[1], n
}

// TestDashboardOnMakeUp loads each page of the dashboard make up installs (NodePort 30300) in
// headless Chromium: the overview names every node and plots their CPU and memory; workloads
// lists the monitoring stack's Deployments and DaemonSet; pods lists Prometheus' pod, whose
// page shows its log and plots its CPU and memory; serverless lists a Function the test
// deploys, with the calls it made, and plots its calls against its pods; events lists the test namespace's
// events. It also reaches the dashboard through kubectl port-forward. Screenshots of every
// page are kept in a folder the test logs.
func TestDashboardOnMakeUp(t *testing.T) {
	c := requireMakeUp(t)
	kc := []string{"--kubeconfig", c.kubeconfig}
	real := func(args ...string) string {
		return execOK(t, append([]string{realKubectl}, append(kc, args...)...)...)
	}
	if _, err := execErr(t.Context(), append([]string{realKubectl}, append(kc, "-n", monitoringNS, "get", "deployment", "dashboard")...)...); err != nil {
		t.Fatalf("no dashboard on the make up cluster (make up installs it unless MINIK8S_MONITORING=0; or scripts/monitoring.sh install): %v", err)
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatalf("no chromium to load the pages with (make up installs Debian's chromium with the monitoring stack; apt-get install chromium): %v", err)
	}
	real("-n", monitoringNS, "rollout", "status", "deployment/dashboard", "--timeout=180s")

	nodes := strings.Fields(real("get", "nodes", "-o", "jsonpath={.items[*].metadata.name}"))
	ip := strings.Fields(real("get", "nodes", "-o", `jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}`))
	port := strings.TrimSpace(real("-n", monitoringNS, "get", "service", "dashboard", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	if len(nodes) == 0 || len(ip) == 0 || port != "30300" {
		t.Fatalf("nodes %v, first node's InternalIP %v, dashboard's nodePort %q: want nodes, an address and 30300", nodes, ip, port)
	}
	prometheusPod := strings.TrimSpace(real("-n", monitoringNS, "get", "pods", "-l", "app.kubernetes.io/name=prometheus",
		"-o", "jsonpath={.items[0].metadata.name}"))

	shots, err := os.MkdirTemp("", "minik8s-dashboard-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of the dashboard's pages in %s", shots)
	b := browser{t: t, base: "http://" + ip[0] + ":" + port, profile: t.TempDir(), shotsDir: shots}

	// waitPage loads path until ok accepts its DOM, then takes its screenshot.
	waitPage := func(t *testing.T, name, path string, timeout time.Duration, ok func(dom string) string) {
		t.Helper()
		var why string
		defer func() {
			if t.Failed() {
				t.Logf("%s: %s", path, why)
			}
		}()
		eventually(t, timeout, "page "+path+" to show its data", func() bool {
			dom, err := b.dom(path)
			if err != nil {
				why = err.Error()
				return false
			}
			why = ok(dom)
			return why == ""
		})
		b.screenshot(name, path)
	}
	drawn := func(dom, id string) string {
		state, n := plotState(dom, id)
		if state != "drawn" || n == 0 {
			return fmt.Sprintf("plot %s is %q with %d points", id, state, n)
		}
		return ""
	}
	lacks := func(dom string, want ...string) string {
		for _, w := range want {
			if !strings.Contains(dom, w) {
				return "no " + w
			}
		}
		return ""
	}

	ns := fmt.Sprintf("e2e-dash-%d", time.Now().UnixNano()%1_000_000)
	real("create", "namespace", ns)
	t.Cleanup(func() {
		_, _ = execErr(t.Context(), append([]string{realKubectl}, append(kc, "delete", "namespace", ns, "--wait=false")...)...)
	})
	fnFile := filepath.Join(t.TempDir(), "hello.yaml")
	if err := os.WriteFile(fnFile, []byte(helloFunction), 0o600); err != nil {
		t.Fatal(err)
	}
	real("-n", ns, "apply", "-f", fnFile)

	t.Run("overview", func(t *testing.T) {
		waitPage(t, "overview", "/", 3*time.Minute, func(dom string) string {
			for _, n := range nodes {
				if why := lacks(dom, `data-node="`+n+`"`); why != "" {
					return why
				}
			}
			return cmp.Or(lacks(dom, `data-phase="Running"`), drawn(dom, "plot-node-cpu"), drawn(dom, "plot-node-memory"))
		})
	})
	t.Run("workloads", func(t *testing.T) {
		waitPage(t, "workloads", "/workloads", 2*time.Minute, func(dom string) string {
			return lacks(dom, "<td>prometheus</td>", "<td>dashboard</td>", "<td>node-exporter</td>")
		})
	})
	t.Run("pods", func(t *testing.T) {
		waitPage(t, "pods", "/pods", 2*time.Minute, func(dom string) string {
			return lacks(dom, `data-pod="`+monitoringNS+`/`+prometheusPod+`"`)
		})
		path := "/pods?namespace=" + monitoringNS + "&pod=" + prometheusPod
		waitPage(t, "pod", path, 3*time.Minute, func(dom string) string {
			log := regexp.MustCompile(`(?s)<pre class="log" id="log">(.*?)</pre>`).FindStringSubmatch(dom)
			if log == nil || !strings.Contains(log[1], "msg=") {
				return "no log lines of Prometheus"
			}
			return cmp.Or(lacks(dom, "Pod "+monitoringNS+"/"+prometheusPod, "minik8s/prometheus:1.0"),
				drawn(dom, "plot-pod-cpu"), drawn(dom, "plot-pod-memory"))
		})
	})
	t.Run("serverless", func(t *testing.T) {
		eventually(t, 6*time.Minute, "function hello Ready", func() bool {
			out, err := execErr(t.Context(), append([]string{realKubectl}, append(kc, "-n", ns, "get", "function", "hello",
				"-o", "jsonpath={.status.phase}")...)...)
			return err == nil && strings.TrimSpace(out) == "Ready"
		})
		const calls = 5
		for i := range calls {
			r, err := c.invoke(t.Context(), ns, "hello", fmt.Sprintf(`{"name":"call-%d"}`, i))
			if err != nil || r.code != http.StatusOK {
				t.Fatalf("call %d of hello: %v %d %s", i, err, r.code, r.raw)
			}
		}
		callsRe := regexp.MustCompile(`data-function="` + regexp.QuoteMeta(ns) + `/hello" data-calls="(\d+)"`)
		waitPage(t, "serverless", "/serverless?function="+ns+"/hello", 3*time.Minute, func(dom string) string {
			m := callsRe.FindStringSubmatch(dom)
			if m == nil {
				return "no row of function " + ns + "/hello"
			}
			if n, _ := strconv.Atoi(m[1]); n < calls {
				return fmt.Sprintf("function %s/hello shows %s calls, want at least %d", ns, m[1], calls)
			}
			// Every series of the plot (calls/s, desired replicas, pods) is the function's own:
			// points mean Prometheus has seen it run.
			return drawn(dom, "plot-function")
		})
	})
	t.Run("events", func(t *testing.T) {
		waitPage(t, "events", "/events", 2*time.Minute, func(dom string) string {
			return lacks(dom, `id="events"`, "<td>"+ns+"</td>")
		})
	})
	t.Run("port-forward", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), realKubectl, append(kc, "-n", monitoringNS, "port-forward", "svc/dashboard", ":80")...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		buf := make([]byte, 512)
		n, err := stdout.Read(buf)
		local := regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindStringSubmatch(string(buf[:n]))
		if err != nil || local == nil {
			t.Fatalf("kubectl port-forward said %q (%v), want its local port", buf[:n], err)
		}
		var got string
		pf := browser{t: t, base: "http://127.0.0.1:" + local[1], profile: t.TempDir(), shotsDir: shots}
		eventually(t, time.Minute, "the overview through port-forward", func() bool {
			dom, err := pf.dom("/")
			got = dom
			return err == nil && strings.Contains(dom, `data-node="`+nodes[0]+`"`)
		})
		if !strings.Contains(got, `data-node="`+nodes[0]+`"`) {
			t.Errorf("the overview through port-forward lacks node %s", nodes[0])
		}
	})
}
