package manager

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/run"
)

// order records starts and stops.
type order struct {
	mu     sync.Mutex
	events []string
}

func (o *order) add(e string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, e)
}

func (o *order) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

func (o *order) part(name string) run.Runnable {
	return run.Func(func(ctx context.Context) error {
		o.add("start " + name)
		<-ctx.Done()
		o.add("stop " + name)
		return nil
	})
}

func newTest(t *testing.T, opts Options) *Manager {
	t.Helper()
	opts.Name = "test"
	// Nothing is asked of the API: no informer is requested and there is no bus.
	opts.ClientConfig = &client.Config{Server: "https://127.0.0.1:1", Token: "t"}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPartsStartInOrderAndStopInReverse(t *testing.T) {
	m := newTest(t, Options{ShutdownTimeout: 5 * time.Second})
	var o order
	m.Add("a", o.part("a"))
	m.Add("b", o.part("b"))
	m.AddLeading("led", o.part("led"))
	if !m.Leader().IsLeader() {
		t.Error("without leader election the process always leads")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(o.get()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("parts started: %v, want a, b and the leading part", o.get())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start = %v", err)
	}
	ev := o.get()
	stops := slices.DeleteFunc(slices.Clone(ev), func(e string) bool { return e[:4] != "stop" })
	if want := []string{"stop led", "stop b", "stop a"}; !slices.Equal(stops, want) {
		t.Errorf("stopped in order %v, want %v (leader-gated parts first, then the others in reverse)", stops, want)
	}
}

func TestPartFailureStopsTheRest(t *testing.T) {
	m := newTest(t, Options{ShutdownTimeout: 5 * time.Second})
	var o order
	m.Add("steady", o.part("steady"))
	boom := errors.New("boom")
	m.Add("failing", run.Func(func(context.Context) error { return boom }))
	err := m.Start(t.Context())
	if !errors.Is(err, boom) {
		t.Fatalf("Start = %v, want the failing part's error", err)
	}
	if ev := o.get(); !slices.Contains(ev, "stop steady") {
		t.Errorf("events %v: the steady part was not stopped", ev)
	}
}

func TestSubscription(t *testing.T) {
	m := newTest(t, Options{Queue: bus.QueueControllerManager})
	sub, err := m.subscription()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := bus.Bindings(bus.QueueControllerManager)
	if !slices.Equal(sub.Bindings, want) || sub.Handler == nil || !sub.NoAck {
		t.Errorf("default subscription: bindings %v handler set %v noAck %v; want the queue's bindings, the factory's handler, no acks",
			sub.Bindings, sub.Handler != nil, sub.NoAck)
	}
	called := false
	m.OnConnect(func(context.Context) error { called = true; return nil })
	if err := sub.OnConnect(t.Context()); err != nil || !called {
		t.Errorf("OnConnect: err %v, component's hook called %v", err, called)
	}

	own := newTest(t, Options{Queue: bus.QueueControllerManager, BusHandler: func(context.Context, bus.Delivery) error { return nil }})
	sub, _ = own.subscription()
	if sub.NoAck {
		t.Error("a component's own handler may fail: its deliveries must be acknowledged")
	}
	never := newTest(t, Options{Queue: bus.QueueControllerManager, BusNoAck: true, BusHandler: func(context.Context, bus.Delivery) error { return nil }})
	sub, _ = never.subscription()
	if !sub.NoAck {
		t.Error("BusNoAck: a handler that never fails is consumed without acknowledgements")
	}
	routed := newTest(t, Options{Queue: bus.QueueControllerManager})
	var got []string
	routed.Route("pods", func(_ context.Context, d bus.Delivery) error { got = append(got, d.RoutingKey); return nil })
	sub, _ = routed.subscription()
	if sub.NoAck {
		t.Error("a routed resource's handler may fail: deliveries must be acknowledged")
	}
	for _, key := range []string{"pods.node.n1.modified", "nodes.n1.modified"} {
		if err := sub.Handler(t.Context(), bus.Delivery{Message: bus.Message{RoutingKey: key, Body: []byte(`{}`)}}); err != nil {
			t.Errorf("handle %s: %v", key, err)
		}
	}
	if !slices.Equal(got, []string{"pods.node.n1.modified"}) {
		t.Errorf("routed handler got %v, want only the pod message", got)
	}
	if _, err := newTest(t, Options{Queue: "no-such-queue"}).subscription(); err == nil {
		t.Error("a queue without bindings was accepted")
	}
}

func TestUnbound(t *testing.T) {
	got := Unbound([]string{"pods", "services"}, []string{"pods.#"})
	if !slices.Equal(got, []string{"services"}) {
		t.Errorf("unbound = %v, want [services]", got)
	}
}
