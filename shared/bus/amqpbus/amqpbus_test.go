package amqpbus_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/bus/bustest"
)

// TestContract runs the bus contract against the real RabbitMQ, each subtest
// on a private exchange and private connection names.
func TestContract(t *testing.T) {
	url := amqptest.Require(t)
	bustest.Run(t, func(t *testing.T) bustest.Env {
		exchange := amqptest.Unique("bustest")
		b := amqpbus.New(amqpbus.Config{
			URL:       url,
			Exchange:  exchange,
			Name:      exchange,
			Logger:    testLogger(t),
			Reconnect: bus.Backoff{Initial: 50 * time.Millisecond, Max: time.Second},
		})
		t.Cleanup(func() {
			_ = b.Close()
			amqptest.DeleteExchange(t, exchange)
		})
		return bustest.Env{Bus: b, Disconnect: func(t *testing.T) {
			amqptest.CloseConnections(t, exchange+".consumer.")
		}}
	})
}

// After the broker drops the publishing connection, Send refuses until Publish has
// reconnected, so nothing sent later can overtake what was lost.
func TestSendNeedsPublishAfterFailure(t *testing.T) {
	url := amqptest.Require(t)
	exchange := amqptest.Unique("sendtest")
	b := amqpbus.New(amqpbus.Config{URL: url, Exchange: exchange, Name: exchange, Logger: testLogger(t)})
	t.Cleanup(func() {
		_ = b.Close()
		amqptest.DeleteExchange(t, exchange)
	})
	msg := bus.Message{RoutingKey: "pods.unscheduled.added", ID: "1", Body: []byte(`{}`)}
	if _, err := b.Send(t.Context(), msg); !errors.Is(err, bus.ErrReconnect) {
		t.Fatalf("Send before any Publish: %v, want ErrReconnect", err)
	}
	if err := b.Publish(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	wait, err := b.Send(t.Context(), msg, msg)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(t.Context()); err != nil {
		t.Fatalf("confirms: %v", err)
	}
	amqptest.CloseConnections(t, exchange+".publisher")
	deadline := time.Now().Add(30 * time.Second)
	for {
		wait, err := b.Send(t.Context(), msg)
		if err == nil {
			err = wait(t.Context())
		}
		if errors.Is(err, bus.ErrReconnect) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Send kept working after the connection was closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := b.Send(t.Context(), msg); !errors.Is(err, bus.ErrReconnect) {
		t.Fatalf("Send after a failure: %v, want ErrReconnect", err)
	}
	if err := b.Publish(t.Context(), msg); err != nil {
		t.Fatalf("Publish did not reconnect: %v", err)
	}
	if wait, err := b.Send(t.Context(), msg); err != nil || wait(t.Context()) != nil {
		t.Fatalf("Send after reconnecting: %v", err)
	}
}

// Acks are coalesced, but none is left pending once the consumer has nothing to do: a
// connection cut after a burst has been handled redelivers nothing.
func TestAcksFlushedWhenIdle(t *testing.T) {
	amqptest.Require(t)
	url := amqptest.VHost(t)
	name := amqptest.Unique("acktest")
	b := amqpbus.New(amqpbus.Config{URL: url, Name: name, Logger: testLogger(t),
		Reconnect: bus.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}})
	t.Cleanup(func() { _ = b.Close() })
	var mu sync.Mutex
	handled, redelivered, connects := map[string]bool{}, 0, 0
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		_ = b.Consume(ctx, bus.Subscription{Queue: name, Bindings: []string{"ack.#"}, Prefetch: 64,
			OnConnect: func(context.Context) error { mu.Lock(); connects++; mu.Unlock(); return nil },
			Handler: func(_ context.Context, d bus.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				if d.Redelivered {
					redelivered++
				}
				handled[d.ID] = true
				return nil
			}})
	}()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitUntil("consumer connected", func() bool { return connects == 1 })
	// 45 messages: more than one batch of acks (32) and a tail that only the idle flush acks.
	msgs := make([]bus.Message, 45)
	for i := range msgs {
		msgs[i] = bus.Message{RoutingKey: "ack.x", ID: strconv.Itoa(i), Body: []byte("{}")}
	}
	if err := b.Publish(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
	waitUntil("all handled", func() bool { return len(handled) == len(msgs) })
	// The tail's ack goes out once the consumer has been idle for AckDelay; cut the connection
	// long after that (a hundred times, for a loaded machine), so a redelivery means the idle
	// flush never happened.
	time.Sleep(100 * amqpbus.AckDelay)
	amqptest.CloseConnections(t, name+".consumer.")
	waitUntil("reconnected", func() bool { return connects >= 2 })
	if err := b.Publish(t.Context(), bus.Message{RoutingKey: "ack.x", ID: "fence", Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	waitUntil("fence handled", func() bool { return handled["fence"] })
	mu.Lock()
	defer mu.Unlock()
	if redelivered != 0 {
		t.Errorf("%d of %d handled messages came back after the connection was cut: their acks were still pending", redelivered, len(msgs))
	}
}
