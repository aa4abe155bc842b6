package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
)

// calcFunction is the Function the serverless test deploys: the sum of a and b, the version
// it was built from, after sleeping "sleep" seconds. Short idle and stable windows keep the
// test's waits for zero short.
const calcFunction = `apiVersion: serverless.minik8s.io/v1
kind: Function
metadata:
  name: calc
spec:
  handler: main.handle
  source:
    main.py: |
      import time
      def handle(event):
          time.sleep(event.get("sleep", 0))
          return {"sum": event["a"] %s event["b"], "version": %d}
%s  scale:
    maxReplicas: 3
    targetConcurrency: 4
    stableWindowSeconds: 6
    idleSeconds: 8
  timeoutSeconds: 10
`

// makeUpCluster is the cluster make up runs on this host: its admin kubeconfig and gateway.
type makeUpCluster struct {
	kubeconfig string
	gateway    string
	cl         *client.Client
}

// requireMakeUp returns the running make up cluster, or fails saying how to start one.
func requireMakeUp(t *testing.T) *makeUpCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the make up cluster")
	}
	requireBinaries(t)
	home := os.Getenv("MINIK8S_HOME")
	if home == "" {
		h, _ := os.UserHomeDir()
		home = filepath.Join(h, ".minik8s")
	}
	c := &makeUpCluster{kubeconfig: filepath.Join(home, "kubeconfig"), gateway: os.Getenv("SERVERLESS_GATEWAY_ADDRESS")}
	if c.gateway == "" {
		c.gateway = "127.0.0.1:8090"
	}
	cfg, err := client.FromKubeconfig(c.kubeconfig)
	if err != nil {
		t.Fatalf("no make up cluster (%v): run make up first", err)
	}
	if c.cl, err = client.New(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := client.MustFor[*corev1.Namespace, *corev1.NamespaceList](c.cl).Get(t.Context(), "", "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("the make up cluster does not answer (%v): run make up first", err)
	}
	resp, err := http.Get("http://" + c.gateway + "/healthz")
	if err != nil {
		t.Fatalf("the serverless gateway on %s does not answer (%v): make up starts it", c.gateway, err)
	}
	resp.Body.Close()
	return c
}

// call is one answer of the gateway.
type call struct {
	code     int
	body     map[string]any
	raw      string
	servedBy string
}

// post sends body to the gateway's path and returns its answer, waiting at most timeout.
func (c *makeUpCluster) post(ctx context.Context, timeout time.Duration, path, body string) (int, []byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.gateway+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, resp.Header, err
}

func (c *makeUpCluster) invoke(ctx context.Context, ns, name, body string) (call, error) {
	code, raw, header, err := c.post(ctx, 2*time.Minute, "/function/"+ns+"/"+name, body)
	if err != nil {
		return call{}, err
	}
	out := call{code: code, raw: string(raw), servedBy: header.Get(serverlessv1.HeaderServedBy)}
	_ = json.Unmarshal(raw, &out.body)
	return out, nil
}

// TestServerlessFunction walks a Function's life on the make up cluster: built and called
// with different arguments through the gateway and both kubectls, scaled to zero when idle
// and back on a call, scaled past one pod by 30 callers for 60 s without a failed call and
// back to zero, updated while called without a failed call, called by a cron schedule, a build
// failure that leaves the old version serving, and deleted.
func TestServerlessFunction(t *testing.T) {
	c := requireMakeUp(t)
	ns := fmt.Sprintf("e2e-fn-%d", time.Now().UnixNano()%1_000_000)
	kc := []string{"--kubeconfig", c.kubeconfig}
	ours := func(args ...string) string {
		return execOK(t, append([]string{bins.kubectl}, append(kc, args...)...)...)
	}
	real := func(args ...string) string {
		return execOK(t, append([]string{realKubectl}, append(kc, args...)...)...)
	}
	real("create", "namespace", ns)
	t.Cleanup(func() {
		_, _ = execErr(context.Background(), realKubectl, "--kubeconfig", c.kubeconfig, "delete", "namespace", ns, "--wait=false")
	})
	functions := client.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](c.cl)
	deployments := client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c.cl)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	dir := t.TempDir()
	apply := func(op string, version int, extra string) {
		t.Helper()
		path := filepath.Join(dir, fmt.Sprintf("calc-%d.yaml", version))
		if err := os.WriteFile(path, []byte(fmt.Sprintf(calcFunction, op, version, extra)), 0o600); err != nil {
			t.Fatal(err)
		}
		ours("-n", ns, "apply", "-f", path)
	}
	get := func() *serverlessv1.Function {
		fn, err := functions.Get(t.Context(), ns, "calc", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get function: %v", err)
		}
		return fn
	}
	// Builds take a while on a busy machine.
	waitFn := func(what string, cond func(*serverlessv1.Function) bool) *serverlessv1.Function {
		t.Helper()
		var fn *serverlessv1.Function
		eventually(t, 5*time.Minute, "function calc "+what, func() bool { fn = get(); return cond(fn) })
		return fn
	}
	mustCall := func(body string) call {
		t.Helper()
		r, err := c.invoke(t.Context(), ns, "calc", body)
		if err != nil {
			t.Fatalf("call %s: %v", body, err)
		}
		if r.code != http.StatusOK {
			t.Fatalf("call %s: %d %s", body, r.code, r.raw)
		}
		return r
	}
	podCount := func() int {
		l, err := pods.List(t.Context(), ns, metav1.ListOptions{LabelSelector: serverlessv1.LabelFunction + "=calc"})
		if err != nil {
			t.Fatalf("list pods: %v", err)
		}
		return len(l.Items)
	}
	waitZero := func() {
		t.Helper()
		eventually(t, 3*time.Minute, "calc at zero pods", func() bool {
			d, err := deployments.Get(t.Context(), ns, "calc", metav1.GetOptions{})
			return err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && podCount() == 0
		})
	}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	step("deploy and call", func(t *testing.T) {
		apply("+", 1, "")
		fn := waitFn("built and deployed", func(fn *serverlessv1.Function) bool {
			return fn.Status.Phase == "Ready" && fn.Status.Image != ""
		})
		if fn.Status.Version != 1 || fn.Status.Image != "minik8s-fn/"+ns+".calc:v1" {
			t.Errorf("version %d image %q", fn.Status.Version, fn.Status.Image)
		}
		d, err := deployments.Get(t.Context(), ns, "calc", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ref := metav1.GetControllerOf(d); ref == nil || ref.UID != fn.UID {
			t.Errorf("deployment owner %+v, want the function %s", ref, fn.UID)
		}
		for _, tc := range []struct {
			in   string
			want float64
		}{{`{"a": 1, "b": 2}`, 3}, {`{"a": -5, "b": 10}`, 5}, {`{"a": 0.5, "b": 0.25}`, 0.75}} {
			r := mustCall(tc.in)
			if r.body["sum"] != tc.want || r.body["version"] != float64(1) || r.servedBy == "" {
				t.Errorf("call %s: %s (served by %q), want sum %v from version 1", tc.in, r.raw, r.servedBy, tc.want)
			}
		}
		// Our kubectl's execute and the real kubectl's raw POST go through the apiserver.
		if out := ours("execute", ns+"/calc", `{"a": 20, "b": 22}`); !strings.Contains(out, `"sum": 42`) && !strings.Contains(out, `"sum":42`) {
			t.Errorf("kubectl execute: %s", out)
		}
		body := filepath.Join(dir, "body.json")
		if err := os.WriteFile(body, []byte(`{"a": 100, "b": 1}`), 0o600); err != nil {
			t.Fatal(err)
		}
		out := real("create", "--raw", "/apis/serverless.minik8s.io/v1/namespaces/"+ns+"/functions/calc/invoke", "-f", body)
		if !strings.Contains(out, `101`) {
			t.Errorf("real kubectl invoke: %s", out)
		}
		if out := real("-n", ns, "get", "functions"); !strings.Contains(out, "calc") {
			t.Errorf("real kubectl get functions: %s", out)
		}
		if r, err := c.invoke(t.Context(), ns, "calc", `{"a": 1,`); err != nil || r.code != http.StatusBadRequest {
			t.Errorf("invalid JSON: %v %d %s, want 400", err, r.code, r.raw)
		}
		if r, err := c.invoke(t.Context(), ns, "calc", `{"a": 1}`); err != nil || r.code != http.StatusBadGateway || !strings.Contains(r.raw, "KeyError") {
			t.Errorf("handler raising: %v %d %s, want 502 with the KeyError", err, r.code, r.raw)
		}
	})

	step("idle to zero and a call at zero", func(t *testing.T) {
		waitZero()
		r := mustCall(`{"a": 2, "b": 3}`)
		if r.body["sum"] != float64(5) {
			t.Errorf("call at zero: %s", r.raw)
		}
	})

	step("30 callers for 60 s", func(t *testing.T) {
		var failed, ok atomic.Int64
		var mu sync.Mutex
		servedBy := map[string]int{}
		var firstErr atomic.Value
		maxReplicas := int32(0)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ctx.Err() == nil; n++ {
					body := fmt.Sprintf(`{"a": %d, "b": %d, "sleep": 0.2}`, i, n)
					r, err := c.invoke(context.WithoutCancel(ctx), ns, "calc", body)
					switch {
					case err != nil:
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					case r.code != http.StatusOK || r.body["sum"] != float64(i+n):
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %d %s", body, r.code, r.raw))
					default:
						ok.Add(1)
						mu.Lock()
						servedBy[r.servedBy]++
						mu.Unlock()
					}
				}
			}()
		}
		for ctx.Err() == nil {
			if d, err := deployments.Get(t.Context(), ns, "calc", metav1.GetOptions{}); err == nil && d.Status.ReadyReplicas > maxReplicas {
				maxReplicas = d.Status.ReadyReplicas
			}
			sleep(t, time.Second)
		}
		wg.Wait()
		t.Logf("%d calls answered, %d failed; ready pods at most %d; answers by pod %v", ok.Load(), failed.Load(), maxReplicas, servedBy)
		if failed.Load() > 0 {
			t.Errorf("%d calls failed, the first: %v", failed.Load(), firstErr.Load())
		}
		if maxReplicas < 2 {
			t.Errorf("ready pods at most %d under load, want more than one", maxReplicas)
		}
		if len(servedBy) < 2 {
			t.Errorf("answers from %d pods (%v), want several", len(servedBy), servedBy)
		}
		waitZero()
	})

	step("update changes the answer", func(t *testing.T) {
		// Callers keep calling through the rollout: none of their calls may fail.
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var wg sync.WaitGroup
		var failed atomic.Int64
		var firstErr atomic.Value
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					r, err := c.invoke(context.WithoutCancel(ctx), ns, "calc", fmt.Sprintf(`{"a": %d, "b": 2, "sleep": 0.1}`, i))
					if err != nil || r.code != http.StatusOK {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Sprintf("%v %d %s", err, r.code, r.raw))
					}
				}
			}()
		}
		eventually(t, 2*time.Minute, "a ready pod of version 1", func() bool {
			d, err := deployments.Get(t.Context(), ns, "calc", metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas > 0
		})
		apply("*", 2, "")
		waitFn("at version 2", func(fn *serverlessv1.Function) bool {
			return fn.Status.Version == 2 && fn.Status.Phase == "Ready" && fn.Status.Image == "minik8s-fn/"+ns+".calc:v2"
		})
		eventually(t, 2*time.Minute, "an answer of version 2", func() bool {
			r := mustCall(`{"a": 6, "b": 7}`)
			return r.body["version"] == float64(2) && r.body["sum"] == float64(42)
		})
		eventually(t, 2*time.Minute, "the rollout to end", func() bool {
			l, err := pods.List(t.Context(), ns, metav1.ListOptions{LabelSelector: serverlessv1.LabelFunction + "=calc," + serverlessv1.LabelVersion + "=1"})
			return err == nil && len(l.Items) == 0
		})
		cancel()
		wg.Wait()
		if failed.Load() > 0 {
			t.Errorf("%d calls failed during the update, the first: %v", failed.Load(), firstErr.Load())
		}
	})

	step("a schedule calls it", func(t *testing.T) {
		// Schedules are not part of the source: no new version.
		apply("*", 2, "  schedules:\n  - name: often\n    schedule: \"@every 3s\"\n    input: '{\"a\": 2, \"b\": 21}'\n")
		fn := waitFn("called by its schedule", func(fn *serverlessv1.Function) bool {
			return len(fn.Status.Schedules) == 1 && fn.Status.Schedules[0].LastResult == "Succeeded"
		})
		if fn.Status.Version != 2 || fn.Status.Schedules[0].Name != "often" || fn.Status.Schedules[0].LastScheduleTime == nil {
			t.Errorf("status after scheduled calls: version %d, schedules %+v", fn.Status.Version, fn.Status.Schedules)
		}
		if out := real("-n", ns, "get", "events", "--field-selector", "involvedObject.name=calc"); !strings.Contains(out, "ScheduledCall") {
			t.Errorf("no ScheduledCall event:\n%s", out)
		}
	})

	step("a failed build leaves the old version serving", func(t *testing.T) {
		apply("-", 3, "  requirements: |\n    minik8s-no-such-package==1.0\n")
		fn := waitFn("failed", func(fn *serverlessv1.Function) bool { return fn.Status.Phase == "Failed" })
		if fn.Status.Build == nil || fn.Status.Build.Version != 3 || fn.Status.Build.Message == "" || fn.Status.Image != "minik8s-fn/"+ns+".calc:v2" {
			t.Errorf("status after a failed build: %+v", fn.Status)
		}
		if out := ours("-n", ns, "describe", "function", "calc"); !strings.Contains(out, "BuildFailed") {
			t.Errorf("describe shows no BuildFailed event:\n%s", out)
		}
		r := mustCall(`{"a": 6, "b": 7}`)
		if r.body["version"] != float64(2) || r.body["sum"] != float64(42) {
			t.Errorf("after a failed build: %s, want version 2's answer", r.raw)
		}
	})

	step("delete makes calls 404", func(t *testing.T) {
		ours("-n", ns, "delete", "function", "calc")
		eventually(t, 2*time.Minute, "calls to answer 404", func() bool {
			r, err := c.invoke(t.Context(), ns, "calc", `{"a": 1, "b": 1}`)
			return err == nil && r.code == http.StatusNotFound
		})
		eventually(t, 2*time.Minute, "the deployment and pods gone", func() bool {
			_, err := deployments.Get(t.Context(), ns, "calc", metav1.GetOptions{})
			return err != nil && podCount() == 0
		})
		eventually(t, 3*time.Minute, "the images gone", func() bool {
			out, err := execErr(t.Context(), "docker", "images", "-q", "minik8s-fn/"+ns+".calc")
			return err == nil && len(bytes.TrimSpace([]byte(out))) == 0
		})
	})
}
