package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/workqueue/clock"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// execer answers Exec with a settable exit code and counts calls per container.
type execer struct {
	mu    sync.Mutex
	code  map[string]int
	calls map[string]int
}

func newExecer() *execer { return &execer{code: map[string]int{}, calls: map[string]int{}} }

func (e *execer) Exec(_ context.Context, id string, _ []string) (runtime.ExecResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls[id]++
	return runtime.ExecResult{ExitCode: e.code[id], Output: []byte("out")}, nil
}

func (e *execer) set(id string, code int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.code[id] = code
}

func (e *execer) count(id string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[id]
}

type env struct {
	t       *testing.T
	clk     *clock.Fake
	m       *Manager
	changes atomic.Int32
	ctx     context.Context
}

func newEnv(t *testing.T, ex Execer) *env {
	e := &env{t: t, clk: clock.NewFake(t0)}
	e.m = New(Config{Exec: ex, Clock: e.clk, OnChange: func(string) { e.changes.Add(1) }})
	ctx, cancel := context.WithCancel(context.Background())
	e.ctx = ctx
	t.Cleanup(func() { cancel(); e.m.Wait() })
	return e
}

// until steps the clock a second at a time until cond holds.
func (e *env) until(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		for j := 0; j < 20; j++ {
			if cond() {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		if i > 300 || time.Now().After(deadline) {
			e.t.Fatalf("%s: not reached after %d steps", what, i)
		}
		e.clk.Step(time.Second)
	}
}

func target(id string, c *corev1.Container) Target {
	return Target{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"}},
		PodIP: "127.0.0.1", Container: c, ContainerID: id, StartedAt: t0}
}

func (e *env) result(id string, k Kind) Result {
	r, _ := e.m.Get(id, k)
	return r
}

func TestHTTPReadiness(t *testing.T) {
	var code atomic.Int32
	code.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			w.WriteHeader(404)
			return
		}
		w.WriteHeader(int(code.Load()))
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)

	e := newEnv(t, newExecer())
	c := &corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
		PeriodSeconds: 1, FailureThreshold: 2, SuccessThreshold: 1,
	}, Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(p)}}}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	if r, ok := e.m.Get("c1", Readiness); !ok || r != Failure {
		t.Fatalf("readiness before any probe = %v, %v; want Failure (not ready until proven)", r, ok)
	}
	e.until("ready", func() bool { return e.result("c1", Readiness) == Success })
	code.Store(503)
	e.until("unready", func() bool { return e.result("c1", Readiness) == Failure })
	if e.changes.Load() < 2 {
		t.Errorf("OnChange called %d times, want at least 2", e.changes.Load())
	}
	code.Store(302)
	e.until("ready again on a redirect status", func() bool { return e.result("c1", Readiness) == Success })
}

func TestTCPLiveness(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	e := newEnv(t, newExecer())
	c := &corev1.Container{Name: "app", LivenessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, FailureThreshold: 1,
	}}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	if r := e.result("c1", Liveness); r != Success {
		t.Fatalf("liveness before any probe = %v, want Success", r)
	}
	for range 3 {
		e.clk.Step(time.Second)
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.result("c1", Liveness); r != Success {
		t.Fatalf("liveness with a listening port = %v, want Success", r)
	}
	ln.Close()
	e.until("dead", func() bool { return e.result("c1", Liveness) == Failure })
}

func TestExecThresholdsAndDelay(t *testing.T) {
	ex := newExecer()
	e := newEnv(t, ex)
	c := &corev1.Container{Name: "app", LivenessProbe: &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 5, PeriodSeconds: 2, FailureThreshold: 3,
	}}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	e.until("first probe", func() bool { return ex.count("c1") > 0 })
	if since := e.clk.Since(t0); since < 5*time.Second {
		t.Errorf("first probe %s after start, want after the 5s initial delay", since)
	}
	ex.set("c1", 1)
	start := ex.count("c1")
	e.until("failure", func() bool { return e.result("c1", Liveness) == Failure })
	if n := ex.count("c1") - start; n < 3 {
		t.Errorf("failure after %d failed probes, want the threshold of 3", n)
	}
}

func TestStartupGatesLiveness(t *testing.T) {
	ex := newExecer()
	e := newEnv(t, ex)
	ex.set("c1", 1)
	c := &corev1.Container{Name: "app",
		StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"started"}}},
			PeriodSeconds: 1, FailureThreshold: 100},
		LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"live"}}},
			PeriodSeconds: 1, FailureThreshold: 1},
	}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	for range 5 {
		e.clk.Step(time.Second)
		time.Sleep(10 * time.Millisecond)
	}
	if r := e.result("c1", Liveness); r != Success {
		t.Fatalf("liveness = %v while the startup probe has not passed, want untouched Success", r)
	}
	if r := e.result("c1", Startup); r != Unknown {
		t.Fatalf("startup = %v below its failure threshold, want Unknown", r)
	}
	// Both probes now run the same exec; the startup passes, then liveness fails on code 1.
	ex.set("c1", 0)
	e.until("started", func() bool { return e.result("c1", Startup) == Success })
	ex.set("c1", 1)
	e.until("liveness runs after startup", func() bool { return e.result("c1", Liveness) == Failure })
}

func TestSyncReplacesWorkersOfNewContainers(t *testing.T) {
	ex := newExecer()
	e := newEnv(t, ex)
	c := &corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	e.until("c1 ready", func() bool { return e.result("c1", Readiness) == Success })
	e.m.Sync(e.ctx, "u1", []Target{target("c2", c)})
	if _, ok := e.m.Get("c1", Readiness); ok {
		t.Error("result of the replaced container c1 still kept")
	}
	e.until("c2 ready", func() bool { return e.result("c2", Readiness) == Success })
	e.m.RemovePod("u1")
	if _, ok := e.m.Get("c2", Readiness); ok {
		t.Error("result kept after RemovePod")
	}
	n := ex.count("c2")
	for range 3 {
		e.clk.Step(time.Second)
	}
	time.Sleep(20 * time.Millisecond)
	if ex.count("c2") != n {
		t.Error("probing continued after RemovePod")
	}
}

// A pod adopted before its address was known is probed at the address once it is.
func TestSyncFollowsALateAddress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	e := newEnv(t, newExecer())
	c := &corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(p))}},
		PeriodSeconds: 1, FailureThreshold: 1, SuccessThreshold: 1,
	}}
	noAddress := target("c1", c)
	noAddress.PodIP = ""
	e.m.Sync(e.ctx, "u1", []Target{noAddress})
	for range 3 {
		e.clk.Step(time.Second)
	}
	time.Sleep(20 * time.Millisecond)
	if r := e.result("c1", Readiness); r != Failure {
		t.Fatalf("readiness without an address = %v, want Failure", r)
	}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	e.until("ready once probed at the pod's address", func() bool { return e.result("c1", Readiness) == Success })
}

// prober_probe_total counts each run by result, and a stopped worker's series go.
func TestResultCounter(t *testing.T) {
	ex := newExecer()
	e := &env{t: t, clk: clock.NewFake(t0)}
	results := NewResultCounter()
	e.m = New(Config{Exec: ex, Clock: e.clk, Results: results})
	ctx, cancel := context.WithCancel(context.Background())
	e.ctx = ctx
	t.Cleanup(func() { cancel(); e.m.Wait() })
	c := &corev1.Container{Name: "app", ReadinessProbe: &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1,
	}}
	e.m.Sync(e.ctx, "u1", []Target{target("c1", c)})
	count := func(result string) float64 {
		return testutil.ToFloat64(results.WithLabelValues("Readiness", result, "app", "web", "default", "u1"))
	}
	e.until("two successful probes counted", func() bool { return count("successful") >= 2 })
	ex.set("c1", 1)
	e.until("a failed probe counted", func() bool { return count("failed") >= 1 })
	if n := testutil.CollectAndCount(results); n != 2 {
		t.Errorf("%d series, want successful and failed", n)
	}
	e.m.RemovePod("u1")
	e.until("the pod's series gone", func() bool { return testutil.CollectAndCount(results) == 0 })
}
