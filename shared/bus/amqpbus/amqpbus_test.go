package amqpbus_test

import (
	"errors"
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
