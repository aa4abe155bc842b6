package fnsuite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/stats"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	mclient "minik8s.io/shared/client"
)

// Config says what to measure.
type Config struct {
	Kubeconfig string // make up's cluster; default $KUBECONFIG, else $MINIK8S_HOME/kubeconfig
	Gateway    string // the serverless gateway's URL
	Calls      int    // warm calls each way, interleaved
	ColdRounds int    // cold starts measured
	// Clients and SaturationTime: the saturation test's concurrent callers and length, each way.
	Clients        int
	SaturationTime time.Duration
	Timeout        time.Duration // for each wait
}

// Defaults are the flags' defaults.
var Defaults = Config{Gateway: "http://127.0.0.1:8090", Calls: 2000, ColdRounds: 5, Clients: 16,
	SaturationTime: 10 * time.Second, Timeout: 3 * time.Minute}

// idleSeconds of the measured function: short, so the cold rounds do not wait long for zero.
const idleSeconds = 2

const poll = 100 * time.Millisecond

// Report is what a run measured.
type Report struct {
	Direct, Gateway stats.Summary // warm calls, sequential
	// Diffs are the gateway's p50 and p99 minus the direct call's.
	DiffP50, DiffP99 time.Duration
	Cold             []time.Duration
	// Calls per second on one pod at saturation, and the calls that failed.
	GatewayRate, DirectRate     float64
	GatewayErrors, DirectErrors int
	Clients                     int
}

type env struct {
	cfg  Config
	log  *slog.Logger
	ns   string
	fns  *mclient.Typed[*serverlessv1.Function, *serverlessv1.FunctionList]
	pods *mclient.Typed[*corev1.Pod, *corev1.PodList]
	http *http.Client
}

// Run measures in a namespace of its own, which it deletes at the end.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Report, error) {
	mu, cleanup, err := cluster.ConnectMakeUp(ctx, cfg.Kubeconfig, "serverless", "fnbench", log)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	tr := &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true, IdleConnTimeout: 90 * time.Second,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}
	e := &env{cfg: cfg, log: log, ns: mu.Namespace,
		fns:  mclient.MustFor[*serverlessv1.Function, *serverlessv1.FunctionList](mu.API),
		pods: mclient.MustFor[*corev1.Pod, *corev1.PodList](mu.API),
		http: &http.Client{Transport: tr, Timeout: time.Minute}}
	return e.run(ctx)
}

func (e *env) function() *serverlessv1.Function {
	one, idle, target := int32(1), int32(idleSeconds), int32(1000)
	return &serverlessv1.Function{
		ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: e.ns},
		Spec: serverlessv1.FunctionSpec{
			Runtime: "python3", Handler: "main.handle",
			Source: map[string]string{"main.py": "def handle(event):\n    return {\"echo\": event}\n"},
			// One pod at most, whatever the load: the saturation test measures one pod.
			Scale: serverlessv1.FunctionScale{MaxReplicas: &one, IdleSeconds: &idle, TargetConcurrency: &target},
		},
	}
}

func (e *env) run(ctx context.Context) (*Report, error) {
	rep := &Report{Clients: e.cfg.Clients}
	if _, err := e.fns.Create(ctx, e.function(), metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	e.log.Info("waiting for the function's image", "namespace", e.ns)
	if err := e.until(ctx, "the function built", func() (bool, error) {
		fn, err := e.fns.Get(ctx, e.ns, "echo", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if fn.Status.Phase == "Failed" {
			return false, fmt.Errorf("the function's build failed: %s", buildMessage(fn))
		}
		return fn.Status.Image != "", nil
	}); err != nil {
		return nil, err
	}
	gw := e.cfg.Gateway + "/function/" + e.ns + "/echo"
	body := []byte(`{"n": 1, "text": "hello"}`)

	// Warm: one call brings a pod up; then calls alternate between the gateway and the pod.
	if _, err := e.post(ctx, gw, body); err != nil {
		return nil, fmt.Errorf("first call: %w", err)
	}
	pod, err := e.readyPod(ctx)
	if err != nil {
		return nil, err
	}
	direct := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(serverlessv1.RuntimePort)) + serverlessv1.RuntimeInvokePath
	for range 50 { // connections and the runtime warm up
		if _, err := e.post(ctx, direct, body); err != nil {
			return nil, fmt.Errorf("direct call to pod %s: %w", pod.Name, err)
		}
		if _, err := e.post(ctx, gw, body); err != nil {
			return nil, err
		}
	}
	var d, g []time.Duration
	for i := range e.cfg.Calls {
		urls := []string{direct, gw}
		if i%2 == 1 {
			urls[0], urls[1] = gw, direct
		}
		for _, u := range urls {
			took, err := e.post(ctx, u, body)
			if err != nil {
				return nil, err
			}
			if u == gw {
				g = append(g, took)
			} else {
				d = append(d, took)
			}
		}
	}
	rep.Direct, rep.Gateway = stats.Summarize(d), stats.Summarize(g)
	rep.DiffP50, rep.DiffP99 = rep.Gateway.P50-rep.Direct.P50, rep.Gateway.P99-rep.Direct.P99
	e.log.Info("warm calls", "direct", rep.Direct, "gateway", rep.Gateway)

	// Saturation on the one pod: the gateway, then the pod directly.
	rep.GatewayRate, rep.GatewayErrors = e.saturate(ctx, gw, body)
	rep.DirectRate, rep.DirectErrors = e.saturate(ctx, direct, body)
	e.log.Info("saturation", "gatewayPerSecond", int(rep.GatewayRate), "directPerSecond", int(rep.DirectRate))

	// Cold starts: wait for zero pods (idle window), then time one call to its answer.
	for i := range e.cfg.ColdRounds {
		if err := e.until(ctx, "the function at zero pods", func() (bool, error) {
			l, err := e.pods.List(ctx, e.ns, metav1.ListOptions{LabelSelector: serverlessv1.LabelFunction + "=echo"})
			return err == nil && len(l.Items) == 0, err
		}); err != nil {
			return rep, err
		}
		took, err := e.post(ctx, gw, body)
		if err != nil {
			return rep, fmt.Errorf("cold call %d: %w", i+1, err)
		}
		e.log.Info("cold start", "round", i+1, "took", took)
		rep.Cold = append(rep.Cold, took)
	}
	return rep, nil
}

func buildMessage(fn *serverlessv1.Function) string {
	if fn.Status.Build != nil {
		return fn.Status.Build.Message
	}
	return "no message"
}

// post calls url with body and answers how long it took; anything but 200 is an error.
func (e *env) post(ctx context.Context, url string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	// As the gateway does: a kept-alive connection the runtime closed is retried, not failed.
	req.Header["X-Idempotency-Key"] = []string{}
	start := time.Now()
	resp, err := e.http.Do(req)
	if err != nil {
		return 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("POST %s: %s: %s", url, resp.Status, b)
	}
	return took, nil
}

// saturate calls url from cfg.Clients goroutines for cfg.SaturationTime: calls per second
// answered 200, and the calls that were not.
func (e *env) saturate(ctx context.Context, url string, body []byte) (float64, int) {
	var ok, failed atomic.Int64
	var once sync.Once
	ctx, cancel := context.WithTimeout(ctx, e.cfg.SaturationTime)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range e.cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, err := e.post(ctx, url, body)
				if err == nil {
					ok.Add(1)
				} else if ctx.Err() == nil {
					failed.Add(1)
					once.Do(func() { e.log.Warn("call failed at saturation", "url", url, "err", err) })
				}
			}
		}()
	}
	wg.Wait()
	return stats.Rate(int(ok.Load()), time.Since(start)), int(failed.Load())
}

func (e *env) readyPod(ctx context.Context) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := e.until(ctx, "a Ready pod of the function", func() (bool, error) {
		l, err := e.pods.List(ctx, e.ns, metav1.ListOptions{LabelSelector: serverlessv1.LabelFunction + "=echo"})
		if err != nil {
			return false, err
		}
		for i, p := range l.Items {
			for _, c := range p.Status.Conditions {
				if p.DeletionTimestamp == nil && p.Status.PodIP != "" && c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					pod = &l.Items[i]
					return true, nil
				}
			}
		}
		return false, nil
	})
	return pod, err
}

// until polls cond every poll until it holds, fails, or cfg.Timeout passes.
func (e *env) until(ctx context.Context, what string, cond func() (bool, error)) error {
	return cluster.Until(ctx, e.cfg.Timeout, poll, what, cond)
}

// Print writes the report as Markdown.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintln(w, "| warm call (sequential) | n | p50 | p90 | p99 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, row := range []struct {
		name string
		s    stats.Summary
	}{{"direct to the pod", r.Direct}, {"through the gateway", r.Gateway}} {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s |\n", row.name, row.s.N, stats.Millis(row.s.P50), stats.Millis(row.s.P90), stats.Millis(row.s.P99), stats.Millis(row.s.Max))
	}
	fmt.Fprintf(w, "\nThe gateway adds %s at p50 and %s at p99 (goal: +2 ms, +5 ms).\n\n", stats.Millis(r.DiffP50), stats.Millis(r.DiffP99))
	if len(r.Cold) > 0 {
		s := stats.Summarize(r.Cold)
		fmt.Fprintf(w, "Cold start, zero pods to the first answer (image built), %d rounds: p50 %s, max %s (goal: p50 under 1 s); rounds:", s.N, stats.Millis(s.P50), stats.Millis(s.Max))
		for _, c := range r.Cold {
			fmt.Fprintf(w, " %s", stats.Millis(c))
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Saturation of one pod, %d clients: %.0f calls/s through the gateway (%d failed), %.0f calls/s directly (%d failed).\n",
		r.Clients, r.GatewayRate, r.GatewayErrors, r.DirectRate, r.DirectErrors)
}
