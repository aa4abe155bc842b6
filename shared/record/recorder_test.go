package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// fakeSink is an in-memory events endpoint that records every call.
type fakeSink struct {
	mu      sync.Mutex
	events  map[string]*corev1.Event // namespace/name
	calls   []string
	failing []error // returned by the next calls, in order
}

func newFakeSink() *fakeSink { return &fakeSink{events: map[string]*corev1.Event{}} }

func (s *fakeSink) fail() error {
	if len(s.failing) == 0 {
		return nil
	}
	err := s.failing[0]
	s.failing = s.failing[1:]
	return err
}

func (s *fakeSink) Create(_ context.Context, ns string, ev *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("create %s count=%d", ev.Reason, ev.Count))
	if err := s.fail(); err != nil {
		return nil, err
	}
	if ns != ev.Namespace {
		return nil, apierror.New(apierror.ErrBadRequest, "namespace mismatch")
	}
	c := ev.DeepCopy()
	s.events[ns+"/"+ev.Name] = c
	return c.DeepCopy(), nil
}

func (s *fakeSink) Patch(_ context.Context, ns, name string, data []byte) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("patch %s %s", name, data))
	if err := s.fail(); err != nil {
		return nil, err
	}
	ev, ok := s.events[ns+"/"+name]
	if !ok {
		return nil, apierror.NotFound("", "events", name)
	}
	if err := json.Unmarshal(data, ev); err != nil {
		return nil, err
	}
	return ev.DeepCopy(), nil
}

func (s *fakeSink) snapshot() ([]string, []*corev1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var evs []*corev1.Event
	for _, ev := range s.events {
		evs = append(evs, ev.DeepCopy())
	}
	return append([]string(nil), s.calls...), evs
}

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func testPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "nginx", UID: "u1", ResourceVersion: "7"}}
}

// flush runs the writer over everything buffered so far and returns when it is written.
func flush(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Start drains the buffer after ctx ends, which makes the test deterministic
	if err := r.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

func TestEventfBuildsEvent(t *testing.T) {
	sink := newFakeSink()
	fc := clock.NewFake(t0)
	r := New(Config{Component: "scheduler", Host: "host1", Sink: sink, Clock: fc})
	r.Eventf(testPod(), corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", "web", "nginx", "node1")
	r.Eventf(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, corev1.EventTypeWarning, "NodeNotReady", "gone")
	flush(t, r)

	_, evs := sink.snapshot()
	if len(evs) != 2 {
		t.Fatalf("%d events written, want 2", len(evs))
	}
	now := metav1.NewTime(t0)
	byReason := map[string]*corev1.Event{}
	for _, ev := range evs {
		byReason[ev.Reason] = ev
	}
	want := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nginx.%x", t0.UnixNano()), Namespace: "web"},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: "web", Name: "nginx", UID: "u1", ResourceVersion: "7",
		},
		Reason: "Scheduled", Message: "Successfully assigned web/nginx to node1", Type: corev1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		Source:              corev1.EventSource{Component: "scheduler", Host: "host1"},
		ReportingController: "scheduler", ReportingInstance: "host1",
	}
	if diff := cmp.Diff(want, byReason["Scheduled"]); diff != "" {
		t.Errorf("pod event (-want +got):\n%s", diff)
	}
	node := byReason["NodeNotReady"]
	if node == nil || node.Namespace != metav1.NamespaceDefault || node.InvolvedObject.Kind != "Node" || node.InvolvedObject.Namespace != "" {
		t.Errorf("event about a cluster-scoped object = %+v, want it in namespace default about Node node1", node)
	}
}

func TestAggregation(t *testing.T) {
	sink := newFakeSink()
	fc := clock.NewFake(t0)
	r := New(Config{Component: "kubelet", Host: "n1", Sink: sink, Clock: fc})
	pod := testPod()
	other := testPod()
	other.Name, other.UID = "redis", "u2"

	r.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	flush(t, r)
	for range 2 {
		fc.Step(time.Minute)
		r.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		flush(t, r)
	}
	r.Eventf(pod, corev1.EventTypeWarning, "BackOff", "another message")
	r.Eventf(other, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
	flush(t, r)

	calls, evs := sink.snapshot()
	name := fmt.Sprintf("nginx.%x", t0.UnixNano())
	wantCalls := []string{
		"create BackOff count=1",
		`patch ` + name + ` {"count":2,"lastTimestamp":"2025-03-01T12:01:00Z","message":"Back-off restarting failed container"}`,
		`patch ` + name + ` {"count":3,"lastTimestamp":"2025-03-01T12:02:00Z","message":"Back-off restarting failed container"}`,
		"create BackOff count=1",
		"create BackOff count=1",
	}
	if diff := cmp.Diff(wantCalls, calls); diff != "" {
		t.Errorf("sink calls (-want +got):\n%s", diff)
	}
	if len(evs) != 3 {
		t.Errorf("%d Events stored, want 3 (one aggregated, one per different message or object)", len(evs))
	}
	for _, ev := range evs {
		if ev.Name == name && (ev.Count != 3 || !ev.FirstTimestamp.Time.Equal(t0) || !ev.LastTimestamp.Time.Equal(t0.Add(2*time.Minute))) {
			t.Errorf("aggregated event count=%d first=%v last=%v; want 3, %v, %v", ev.Count, ev.FirstTimestamp, ev.LastTimestamp, t0, t0.Add(2*time.Minute))
		}
	}
}

func TestPatchOfExpiredEventCreatesIt(t *testing.T) {
	sink := newFakeSink()
	r := New(Config{Component: "c", Sink: sink, Clock: clock.NewFake(t0)})
	r.Eventf(testPod(), corev1.EventTypeNormal, "Pulled", "image pulled")
	flush(t, r)
	sink.mu.Lock()
	clear(sink.events) // the server expired it
	sink.mu.Unlock()
	r.Eventf(testPod(), corev1.EventTypeNormal, "Pulled", "image pulled")
	flush(t, r)
	calls, evs := sink.snapshot()
	if len(calls) != 3 || calls[2] != "create Pulled count=2" {
		t.Errorf("calls = %q, want create, patch, then create with count 2", calls)
	}
	if len(evs) != 1 {
		t.Errorf("%d events stored, want 1", len(evs))
	}
}

func TestNeverBlocksAndCountsDrops(t *testing.T) {
	sink := newFakeSink()
	r := New(Config{Component: "c", Sink: sink, BufferSize: 2, Clock: clock.NewFake(t0)})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			r.Eventf(testPod(), corev1.EventTypeNormal, "Tick", "tick %d", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Eventf blocked with nobody writing")
	}
	if got := r.Dropped(); got != 3 {
		t.Errorf("Dropped = %d, want 3", got)
	}
	// With the buffer full, an event is dropped before its message is formatted: a throttled
	// component reporting every binding must not pay for the ones it drops.
	var formatted countingStringer
	r.Eventf(testPod(), corev1.EventTypeNormal, "Tick", "tick %v", &formatted)
	if formatted != 0 || r.Dropped() != 4 {
		t.Errorf("an event dropped for a full buffer was formatted %d times (Dropped = %d, want 4)", formatted, r.Dropped())
	}
	flush(t, r)
	if _, evs := sink.snapshot(); len(evs) != 2 {
		t.Errorf("%d events written, want the 2 buffered", len(evs))
	}
}

// countingStringer counts how often it is formatted.
type countingStringer int

func (c *countingStringer) String() string { *c++; return "x" }

func TestRejectedEvents(t *testing.T) {
	tests := []struct {
		name      string
		obj       runtime.Object
		eventType string
	}{
		{"unknown type", testPod(), "Info"},
		{"nil object", nil, corev1.EventTypeNormal},
		{"kind not in scheme", &metav1.Status{}, corev1.EventTypeNormal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newFakeSink()
			r := New(Config{Sink: sink})
			r.Eventf(tt.obj, tt.eventType, "Reason", "msg")
			flush(t, r)
			if calls, _ := sink.snapshot(); len(calls) != 0 {
				t.Errorf("sink calls = %q, want none", calls)
			}
		})
	}
}

func TestWriteRetries(t *testing.T) {
	tests := []struct {
		name    string
		failing []error
		calls   int
		written bool
		dropped uint64
	}{
		{"transient error is retried", []error{apierror.New(apierror.ErrUnavailable, "down")}, 2, true, 0},
		{"gives up after three attempts", []error{errors.New("a"), errors.New("b"), errors.New("c")}, 3, false, 1},
		{"invalid is not retried", []error{apierror.New(apierror.ErrInvalid, "bad")}, 1, false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newFakeSink()
			sink.failing = tt.failing
			r := New(Config{Component: "c", Sink: sink}) // real clock: retries wait a few 100ms
			r.Eventf(testPod(), corev1.EventTypeNormal, "Started", "started")
			flush(t, r)
			calls, evs := sink.snapshot()
			if len(calls) != tt.calls {
				t.Errorf("sink calls = %q, want %d", calls, tt.calls)
			}
			if (len(evs) == 1) != tt.written {
				t.Errorf("%d events stored, want written=%v", len(evs), tt.written)
			}
			if r.Dropped() != tt.dropped {
				t.Errorf("Dropped = %d, want %d", r.Dropped(), tt.dropped)
			}
		})
	}
}

func TestStartWritesUntilCancelled(t *testing.T) {
	sink := newFakeSink()
	r := New(Config{Component: "c", Sink: sink, Clock: clock.NewFake(t0)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	r.Eventf(testPod(), corev1.EventTypeNormal, "Started", "started")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if calls, _ := sink.snapshot(); len(calls) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("running recorder did not write the event")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after cancel")
	}
}

func TestFake(t *testing.T) {
	f := NewFake(1)
	f.Eventf(testPod(), corev1.EventTypeNormal, "Created", "created %s", "x")
	f.Event(testPod(), corev1.EventTypeNormal, "Dropped", "buffer full")
	if got := <-f.Events; got != "Normal Created created x" {
		t.Errorf("fake event = %q", got)
	}
	select {
	case got := <-f.Events:
		t.Errorf("second event %q should have been dropped", got)
	default:
	}
}

// With QPS set, a burst beyond Burst waits for tokens from the clock: Burst events go out at
// once, the next only when the clock has moved by 1/QPS.
func TestThrottle(t *testing.T) {
	sink := newFakeSink()
	fc := clock.NewFake(t0)
	r := New(Config{Component: "c", Sink: sink, Clock: fc, QPS: 2, Burst: 3})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	for i := range 5 {
		pod := testPod()
		pod.Name = fmt.Sprintf("p%d", i)
		r.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "assigned %s", pod.Name)
	}
	written := func() int { calls, _ := sink.snapshot(); return len(calls) }
	waitFor := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for written() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d events written, want %d", written(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(3)
	for fc.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if n := written(); n != 3 {
		t.Fatalf("%d events written before the clock moved, want the burst of 3", n)
	}
	fc.Step(500 * time.Millisecond)
	waitFor(4)
	for fc.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	if n := written(); n != 4 {
		t.Fatalf("%d events written after 1/QPS, want 4", n)
	}
	fc.Step(500 * time.Millisecond)
	waitFor(5)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
