package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
)

// fakePod is a function pod: an httptest server speaking the runtime contract. Its handler
// adds a and b, sleeps "sleepMs", raises when "raise" is set, and blocks while gate is closed.
type fakePod struct {
	name string
	ip   string
	srv  *httptest.Server

	ready    atomic.Bool
	inflight atomic.Int32
	maxSeen  atomic.Int32
	calls    atomic.Int32
	gate     chan struct{} // when set, calls wait until it is closed
}

func newFakePod(t *testing.T, name, ip string) *fakePod {
	p := &fakePod{name: name, ip: ip}
	p.ready.Store(true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+serverlessv1.RuntimeReadyPath, func(w http.ResponseWriter, _ *http.Request) {
		if !p.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("POST "+serverlessv1.RuntimeInvokePath, func(w http.ResponseWriter, r *http.Request) {
		n := p.inflight.Add(1)
		defer p.inflight.Add(-1)
		for {
			m := p.maxSeen.Load()
			if n <= m || p.maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		p.calls.Add(1)
		w.Header().Set(serverlessv1.HeaderServedBy, p.name)
		var ev struct {
			A, B    float64
			SleepMs int
			Raise   string
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(serverlessv1.RuntimeError{Error: "BadRequest: " + err.Error()})
			return
		}
		if p.gate != nil {
			<-p.gate
		}
		time.Sleep(time.Duration(ev.SleepMs) * time.Millisecond)
		if ev.Raise != "" {
			w.WriteHeader(http.StatusInternalServerError)
			_ = json.NewEncoder(w).Encode(serverlessv1.RuntimeError{Error: "ValueError: " + ev.Raise, Traceback: "File \"main.py\", line 3, in handle"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]float64{"sum": ev.A + ev.B})
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

type countingActivator struct{ n atomic.Int32 }

func (a *countingActivator) Activate(string, string) { a.n.Add(1) }

type countingCounter struct{ begun, ended atomic.Int32 }

func (c *countingCounter) Begin(string) func() {
	c.begun.Add(1)
	return func() { c.ended.Add(1) }
}

type env struct {
	t       *testing.T
	g       *Gateway
	fns     *informer.Informer
	url     string
	act     *countingActivator
	counter *countingCounter

	listed    chan struct{} // closed: the Functions cache's first list answers firstList
	firstList []serverlessv1.Function

	mu    sync.Mutex
	addrs map[string]string // pod ip:8080 -> test server address
}

// newEnv returns a gateway whose Functions cache is synced (empty) before the test begins.
func newEnv(t *testing.T, cfg Config) *env {
	e := newUnsyncedEnv(t, cfg, nil)
	close(e.listed)
	waitFor(t, "the functions cache synced", e.fns.HasSynced)
	return e
}

// newUnsyncedEnv returns a gateway whose Functions cache lists firstList once e.listed is closed.
func newUnsyncedEnv(t *testing.T, cfg Config, firstList []serverlessv1.Function) *env {
	e := &env{t: t, act: &countingActivator{}, counter: &countingCounter{}, addrs: map[string]string{},
		listed: make(chan struct{}), firstList: firstList}
	e.fns = informer.New(informer.Config{Name: "functions", NoWatch: true, RelistPeriod: time.Hour,
		ListerWatcher: informer.ListWatchFuncs{ListFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			select {
			case <-e.listed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &serverlessv1.FunctionList{ListMeta: metav1.ListMeta{ResourceVersion: "0"}, Items: e.firstList}, nil
		}}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = e.fns.Start(ctx) }()
	tr := NewTransport()
	dialer := &net.Dialer{Timeout: time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		e.mu.Lock()
		if real, ok := e.addrs[addr]; ok {
			addr = real
		}
		e.mu.Unlock()
		return dialer.DialContext(ctx, network, addr)
	}
	if cfg.ColdStartTimeout == 0 {
		cfg.ColdStartTimeout = 20 * time.Second
	}
	cfg.Functions = e.fns
	cfg.Pods = informer.New(informer.Config{Name: "pods"})
	cfg.Transport = tr
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Activator = e.act
	cfg.Counter = e.counter
	e.g = New(cfg)
	srv := httptest.NewServer(e.g.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(e.g.stop)
	e.url = srv.URL
	return e
}

func (e *env) function(name string, mut func(*serverlessv1.Function)) {
	fn := &serverlessv1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: "1"}}
	fn.Status.Image, fn.Status.Phase = "minik8s-fn/default."+name+":v1", "Ready"
	if mut != nil {
		mut(fn)
	}
	if _, err := e.fns.Apply(watch.Added, fn); err != nil {
		e.t.Fatal(err)
	}
}

// pod tells the gateway about a pod of function fn served by fp, ready by the API or not.
func (e *env) pod(fn string, fp *fakePod, apiReady bool, mut func(*corev1.Pod)) *corev1.Pod {
	e.mu.Lock()
	e.addrs[net.JoinHostPort(fp.ip, "8080")] = strings.TrimPrefix(fp.srv.URL, "http://")
	e.mu.Unlock()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fp.name, ResourceVersion: "1",
			Labels: map[string]string{serverlessv1.LabelFunction: fn, serverlessv1.LabelVersion: "1"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fp.ip},
	}
	status := corev1.ConditionFalse
	if apiReady {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if mut != nil {
		mut(pod)
	}
	e.g.podChanged(pod)
	return pod
}

type answer struct {
	status   int
	body     string
	servedBy string
}

func (e *env) call(fn, body string) answer {
	resp, err := http.Post(e.url+"/function/default/"+fn, "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Errorf("POST %s: %v", fn, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, strings.TrimSpace(string(b)), resp.Header.Get(serverlessv1.HeaderServedBy)}
}

func errorOf(t *testing.T, body string) serverlessv1.RuntimeError {
	t.Helper()
	var re serverlessv1.RuntimeError
	if err := json.Unmarshal([]byte(body), &re); err != nil || re.Error == "" {
		t.Fatalf("body %q is not an error of the runtime's shape: %v", body, err)
	}
	return re
}

func TestAnswersAndErrors(t *testing.T) {
	e := newEnv(t, Config{})
	e.function("add", func(fn *serverlessv1.Function) { fn.Spec.TimeoutSeconds = ptr[int32](1) })
	e.function("broken", func(fn *serverlessv1.Function) {
		fn.Status.Image, fn.Status.Phase = "", "Failed"
		fn.Status.Build = &serverlessv1.FunctionBuild{Phase: "Failed", Message: "pip could not install nosuchpkg"}
	})
	e.pod("add", newFakePod(t, "add-1", "10.0.0.1"), true, nil)

	a := e.call("add", `{"a": 2, "b": 3}`)
	if a.status != 200 || a.body != `{"sum":5}` || a.servedBy != "add-1" {
		t.Errorf("call = %+v, want 200 {\"sum\":5} served by add-1", a)
	}
	if a := e.call("add", `{"a": -1.5, "b": 10}`); a.body != `{"sum":8.5}` {
		t.Errorf("call with other parameters = %+v, want {\"sum\":8.5}", a)
	}

	tests := []struct {
		name, fn, body string
		status         int
		contains       string
	}{
		{"unknown function", "nosuch", `{}`, 404, "function default/nosuch not found"},
		{"body not JSON", "add", `{"a": `, 400, "request body is not JSON"},
		{"handler raised", "add", `{"raise": "boom"}`, 502, "ValueError: boom"},
		{"timeout", "add", `{"sleepMs": 3000}`, 504, "did not answer within 1s"},
		{"no image", "broken", `{}`, 503, "pip could not install nosuchpkg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := e.call(tt.fn, tt.body)
			if a.status != tt.status {
				t.Fatalf("status %d (%s), want %d", a.status, a.body, tt.status)
			}
			if re := errorOf(t, a.body); !strings.Contains(re.Error, tt.contains) {
				t.Errorf("error %q, want it to contain %q", re.Error, tt.contains)
			}
		})
	}
	a = e.call("add", `{"raise": "boom"}`)
	if re := errorOf(t, a.body); !strings.Contains(re.Traceback, "main.py") || a.servedBy != "add-1" {
		t.Errorf("a raising handler's answer %+v lost its traceback or X-Served-By", a)
	}
	resp, err := http.Get(e.url + "/function/default/add")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET = %d, want 405", resp.StatusCode)
	}
	// Counted: the calls that reached a pod (two sums, two raises, the timeout), not the refused ones.
	if b, en := e.counter.begun.Load(), e.counter.ended.Load(); b != 5 || en != 5 {
		t.Errorf("counted %d calls begun and %d ended, want 5 and 5", b, en)
	}
}

// TestWaitsForTheFirstList: a call that reaches a gateway that just started waits for its
// Functions cache rather than answering 404.
func TestWaitsForTheFirstList(t *testing.T) {
	fn := serverlessv1.Function{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "add", ResourceVersion: "1"}}
	fn.Status.Image = "minik8s-fn/default.add:v1"
	e := newUnsyncedEnv(t, Config{}, []serverlessv1.Function{fn})
	e.pod("add", newFakePod(t, "add-1", "10.0.0.1"), true, nil)
	done := make(chan answer, 1)
	go func() { done <- e.call("add", `{"a":1,"b":2}`) }()
	time.Sleep(100 * time.Millisecond)
	select {
	case a := <-done:
		t.Fatalf("answered before the cache listed: %+v", a)
	default:
	}
	close(e.listed)
	if a := <-done; a.status != 200 || a.body != `{"sum":3}` {
		t.Errorf("call = %+v, want 200 {\"sum\":3}", a)
	}
}

func TestCallInProcess(t *testing.T) {
	e := newEnv(t, Config{})
	e.function("add", nil)
	e.pod("add", newFakePod(t, "add-1", "10.0.0.1"), true, nil)
	out, err := e.g.Call(t.Context(), "default", "add", []byte(`{"a":1,"b":1}`))
	if err != nil || string(bytes.TrimSpace(out)) != `{"sum":2}` {
		t.Errorf("Call = %s, %v; want {\"sum\":2}", out, err)
	}
	_, err = e.g.Call(t.Context(), "default", "add", []byte(`{"raise":"bad"}`))
	ce, ok := err.(*CallError)
	if !ok || ce.Status != 502 || ce.Message != "ValueError: bad" || ce.Traceback == "" {
		t.Errorf("Call of a raising handler: %#v, want a 502 CallError with the exception and traceback", err)
	}
}

// TestLeastInFlight: 30 slow calls at once over three pods spread evenly: no pod has more
// than its share in flight.
func TestLeastInFlight(t *testing.T) {
	e := newEnv(t, Config{})
	e.function("add", nil)
	pods := []*fakePod{newFakePod(t, "add-a", "10.0.0.1"), newFakePod(t, "add-b", "10.0.0.2"), newFakePod(t, "add-c", "10.0.0.3")}
	for _, p := range pods {
		e.pod("add", p, true, nil)
	}
	// One terminating pod that must get nothing.
	gone := newFakePod(t, "add-z", "10.0.0.9")
	e.pod("add", gone, true, func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Now()} })
	var wg sync.WaitGroup
	served := sync.Map{}
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := e.call("add", `{"a":1,"b":2,"sleepMs":300}`)
			if a.status != 200 {
				t.Errorf("call = %+v", a)
			}
			served.Store(a.servedBy, true)
		}()
	}
	wg.Wait()
	for _, p := range pods {
		if m := p.maxSeen.Load(); m > 10 || p.calls.Load() == 0 {
			t.Errorf("pod %s: %d calls, at most %d at once; want some and at most 10 at once", p.name, p.calls.Load(), m)
		}
	}
	if gone.calls.Load() != 0 {
		t.Errorf("terminating pod got %d calls", gone.calls.Load())
	}
}

// TestContainerConcurrencyQueue: with one call per pod, at most two pods and a queue of two,
// one pod running: the pod takes one call, and three wait (the queue and the second pod's
// share); a fifth call is refused with 429 while the others are served one at a time.
func TestContainerConcurrencyQueue(t *testing.T) {
	e := newEnv(t, Config{})
	e.function("add", func(fn *serverlessv1.Function) {
		fn.Spec.Scale.ContainerConcurrency = ptr[int32](1)
		fn.Spec.Scale.MaxQueue = ptr[int32](2)
		fn.Spec.Scale.MaxReplicas = ptr[int32](2)
	})
	fp := newFakePod(t, "add-1", "10.0.0.1")
	fp.gate = make(chan struct{})
	e.pod("add", fp, true, nil)
	results := make(chan answer, 4)
	for range 4 {
		go func() { results <- e.call("add", `{"a":1,"b":1}`) }()
	}
	p := e.g.pool("default/add")
	waitFor(t, "one call in flight and three queued", func() bool { return fp.inflight.Load() == 1 && p.waiting() == 3 })
	if a := e.call("add", `{"a":1,"b":1}`); a.status != http.StatusTooManyRequests {
		t.Errorf("fifth call = %+v, want 429", a)
	} else if re := errorOf(t, a.body); !strings.Contains(re.Error, "largest scale, and the queue is full (maxQueue 2)") {
		t.Errorf("429 error %q does not say why", re.Error)
	}
	close(fp.gate)
	for range 4 {
		if a := <-results; a.status != 200 {
			t.Errorf("queued call = %+v, want 200", a)
		}
	}
	if m := fp.maxSeen.Load(); m != 1 {
		t.Errorf("pod had %d calls at once, want 1 (containerConcurrency)", m)
	}
}

// TestColdStartHolds: calls to a function with no pod wait; the autoscaler is activated; a pod
// that gets an address is probed by the gateway, and every waiting call is served by it as
// soon as it answers /readyz, before the API says it is ready.
func TestColdStartHolds(t *testing.T) {
	e := newEnv(t, Config{ProbeInterval: 5 * time.Millisecond})
	e.function("add", nil)
	results := make(chan answer, 5)
	for i := range 5 {
		go func() { results <- e.call("add", fmt.Sprintf(`{"a":%d,"b":1}`, i)) }()
	}
	p := e.g.pool("default/add")
	waitFor(t, "five calls held", func() bool { return p.waiting() == 5 })
	if e.act.n.Load() == 0 {
		t.Error("the autoscaler was not activated")
	}
	// While they wait, the autoscaler is asked again every second, once for all of them.
	before := e.act.n.Load()
	time.Sleep(2500 * time.Millisecond)
	if n := e.act.n.Load() - before; n < 1 || n > 3 {
		t.Errorf("%d activations in 2.5 s of five calls waiting, want one a second", n)
	}
	select {
	case a := <-results:
		t.Fatalf("a call was answered with no pod: %+v", a)
	default:
	}
	fp := newFakePod(t, "add-1", "10.0.0.1")
	fp.ready.Store(false)
	e.pod("add", fp, false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending })
	time.Sleep(50 * time.Millisecond)
	if n := p.waiting(); n != 5 {
		t.Errorf("%d calls waiting while the pod's /readyz fails, want 5", n)
	}
	fp.ready.Store(true) // the runtime imported the module; the API does not know yet
	got := map[string]bool{}
	for range 5 {
		a := <-results
		if a.status != 200 || a.servedBy != "add-1" {
			t.Errorf("held call = %+v, want 200 from add-1", a)
		}
		got[a.body] = true
	}
	for i := range 5 {
		if want := fmt.Sprintf(`{"sum":%d}`, i+1); !got[want] {
			t.Errorf("no answer %s among %v", want, got)
		}
	}
}

// TestUnreachablePodRetried: a call to a pod that refuses connections is sent to another pod,
// and the refusing pod gets no more calls.
func TestUnreachablePodRetried(t *testing.T) {
	e := newEnv(t, Config{ProbeInterval: 5 * time.Millisecond})
	e.function("add", nil)
	dead := newFakePod(t, "add-a", "10.0.0.1")
	dead.srv.Close()
	good := newFakePod(t, "add-b", "10.0.0.2")
	e.pod("add", dead, true, nil)
	e.pod("add", good, true, nil)
	for range 10 {
		if a := e.call("add", `{"a":1,"b":1}`); a.status != 200 || a.servedBy != "add-b" {
			t.Errorf("call = %+v, want 200 from add-b", a)
		}
	}
	if got := e.g.ReadyPods("default", "add"); len(got) != 1 || got[0] != "add-b" {
		t.Errorf("ready pods = %v, want [add-b]", got)
	}
	// With no other pod, an unreachable one is a 502 that names it.
	e.g.podGone(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "add-b",
		Labels: map[string]string{serverlessv1.LabelFunction: "add"}}})
	only := newFakePod(t, "add-c", "10.0.0.3")
	only.srv.Close()
	e.pod("add", only, true, nil)
	if a := e.call("add", `{}`); a.status != http.StatusBadGateway || !strings.Contains(a.body, "add-c could not be reached") {
		t.Errorf("call to an unreachable only pod = %+v, want 502 naming it", a)
	}
}

// TestMetrics: the gateway's own registry serves /metrics with the calls it answered.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, Config{Registerer: reg})
	e.function("add", nil)
	e.pod("add", newFakePod(t, "add-1", "10.0.0.1"), true, nil)
	e.call("add", `{"a":1,"b":1}`)
	e.call("nosuch", `{}`)
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`minik8s_serverless_gateway_calls_total{code="200",function="add",namespace="default"} 1`,
		`minik8s_serverless_gateway_calls_total{code="404",function="",namespace=""} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestWorkflowsMounted(t *testing.T) {
	e := newEnv(t, Config{Workflows: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"path":"` + r.URL.Path + `"}`))
	})})
	resp, err := http.Post(e.url+"/workflow/default/pipeline", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != `{"path":"/workflow/default/pipeline"}` {
		t.Errorf("workflow answer = %s", b)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// TestDeletedFunctionForgotten: a deleted function's pool stays while its pods are there and
// goes with the last of them, so the gateway keeps no record of functions that are gone.
func TestDeletedFunctionForgotten(t *testing.T) {
	e := newEnv(t, Config{})
	e.function("add", nil)
	pod := e.pod("add", newFakePod(t, "add-1", "10.0.0.1"), true, nil)
	if a := e.call("add", `{"a":1,"b":2}`); a.status != http.StatusOK {
		t.Fatalf("call = %+v", a)
	}
	pools := func() int {
		e.g.mu.Lock()
		defer e.g.mu.Unlock()
		return len(e.g.pools)
	}
	fn, ok := e.fns.Store().Get("default/add")
	if !ok {
		t.Fatal("function add not in the cache")
	}
	if _, err := e.fns.Apply(watch.Deleted, fn); err != nil {
		t.Fatal(err)
	}
	if n := pools(); n != 1 {
		t.Errorf("%d pools with the deleted function's pod still running, want 1", n)
	}
	e.g.podGone(pod)
	if n := pools(); n != 0 {
		t.Errorf("%d pools once the deleted function's last pod is gone, want 0", n)
	}
}
