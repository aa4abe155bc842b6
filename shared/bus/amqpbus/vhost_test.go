package amqpbus_test

import (
	"context"
	"testing"
	"time"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
)

func TestWithVHost(t *testing.T) {
	for _, tc := range []struct{ in, vhost, want string }{
		{"amqp://guest:guest@127.0.0.1:5672/", "a.b", "amqp://guest:guest@127.0.0.1:5672/a.b"},
		{"amqp://u:p@h:1/old", "new", "amqp://u:p@h:1/new"},
		{"amqp://h", "x/y", "amqp://h/x%2Fy"},
	} {
		got, err := amqpbus.WithVHost(tc.in, tc.vhost)
		if err != nil || got != tc.want {
			t.Errorf("WithVHost(%q, %q) = %q, %v; want %q", tc.in, tc.vhost, got, err, tc.want)
		}
		back, err := amqpbus.VHostOf(got)
		if err != nil || back != tc.vhost {
			t.Errorf("VHostOf(%q) = %q, %v; want %q", got, back, err, tc.vhost)
		}
	}
	if v, _ := amqpbus.VHostOf("amqp://h:1/"); v != "/" {
		t.Errorf("VHostOf without a path = %q, want /", v)
	}
	if err := (amqpbus.Management{}).DeleteVHost(t.Context(), "/"); err == nil {
		t.Error("DeleteVHost(/) did not refuse")
	}
}

// Two buses on the same broker, one on a private vhost: the same exchange and queue names
// carry nothing across, and deleting the vhost takes its queue with it.
func TestVHostIsolates(t *testing.T) {
	amqptest.Require(t)
	private := amqptest.VHost(t)
	queue := amqptest.Unique("vhosttest")
	got := map[string]chan string{"default": make(chan string, 4), "private": make(chan string, 4)}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	buses := map[string]*amqpbus.Bus{}
	for name, u := range map[string]string{"default": amqptest.URL(), "private": private} {
		b := amqpbus.New(amqpbus.Config{URL: u, Name: queue + "." + name, Logger: testLogger(t),
			Reconnect: bus.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}})
		buses[name] = b
		t.Cleanup(func() { _ = b.Close() })
		ready := make(chan struct{})
		var once bool
		go func() {
			_ = b.Consume(ctx, bus.Subscription{Queue: queue, Bindings: []string{"vhosttest.#"},
				OnConnect: func(context.Context) error {
					if !once {
						once = true
						close(ready)
					}
					return nil
				},
				Handler: func(_ context.Context, d bus.Delivery) error {
					got[name] <- string(d.Body)
					return nil
				}})
		}()
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s consumer never connected", name)
		}
	}
	t.Cleanup(func() { amqptest.DeleteQueue(t, queue) })
	if err := buses["private"].Publish(t.Context(), bus.Message{RoutingKey: "vhosttest.x", ID: "1", Body: []byte("private")}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got["private"]:
		if b != "private" {
			t.Fatalf("private consumer got %q", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the private vhost's consumer never got its message")
	}
	// The default vhost's consumer must stay empty: publish a marker there, and it must be
	// the first (and only) thing that consumer sees.
	if err := buses["default"].Publish(t.Context(), bus.Message{RoutingKey: "vhosttest.x", ID: "2", Body: []byte("default")}); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-got["default"]:
		if b != "default" {
			t.Fatalf("the default vhost's consumer got %q from the private vhost", b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the default vhost's consumer never got its message")
	}
	// Deleting the vhost takes its queue with it.
	vhost, err := amqpbus.VHostOf(private)
	if err != nil {
		t.Fatal(err)
	}
	if exists, _, _, err := amqptest.QueueState(t.Context(), vhost, queue); err != nil || !exists {
		t.Fatalf("the private vhost's queue is not there (err %v)", err)
	}
	cancel()
	if err := amqptest.DeleteVHost(t.Context(), vhost); err != nil {
		t.Fatal(err)
	}
	if exists, _, _, err := amqptest.QueueState(t.Context(), vhost, queue); err != nil || exists {
		t.Fatalf("queue still there after its vhost was deleted (err %v)", err)
	}
}
