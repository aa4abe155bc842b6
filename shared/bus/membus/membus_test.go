package membus_test

import (
	"context"
	"errors"
	"testing"

	"minik8s.io/shared/bus"

	"minik8s.io/shared/bus/bustest"
	"minik8s.io/shared/bus/membus"
)

func TestContract(t *testing.T) {
	bustest.Run(t, func(t *testing.T) bustest.Env {
		b := membus.New(nil)
		return bustest.Env{Bus: b, Disconnect: func(*testing.T) { b.Disconnect() }}
	})
}

func TestFailPublishAndLen(t *testing.T) {
	b := membus.New(nil)
	ctx, cancel := context.WithCancel(t.Context())
	connected := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(ctx, bus.Subscription{Queue: "q", Bindings: []string{"a.*"},
			OnConnect: func(context.Context) error { close(connected); return nil },
			Handler:   func(context.Context, bus.Delivery) error { return nil }})
	}()
	<-connected
	cancel() // stop consuming so messages stay queued
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}

	broken := errors.New("broker down")
	b.FailPublish(broken)
	if err := b.Publish(t.Context(), bus.Message{RoutingKey: "a.b"}); !errors.Is(err, broken) {
		t.Fatalf("Publish while failing = %v, want %v", err, broken)
	}
	b.FailPublish(nil)
	if err := b.Publish(t.Context(), bus.Message{RoutingKey: "a.b"}, bus.Message{RoutingKey: "x.y"}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if got := b.Len("q"); got != 1 {
		t.Errorf("Len(q) = %d, want 1 (the failed publish and the unrouted message must not be queued)", got)
	}
}
