package busbench

import (
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// body is the size of a ConfigMap event as the outbox publishes it.
var body = []byte(`{"type":"ADDED","object":` + `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x"},"data":{"payload":"` + strings.Repeat("a", 400) + `"}}}`)

// BenchmarkPublish measures one confirmed Publish call: ns/op is the time per
// call, and the msgs/s metric the publishing rate one serial publisher (the
// outbox) gets from it.
func BenchmarkPublish(b *testing.B) {
	url := amqptest.URL()
	for _, queued := range []bool{false, true} {
		for _, batch := range []int{1, 16, 256} {
			name := fmt.Sprintf("durable-queue=%v/batch=%d", queued, batch)
			b.Run(name, func(b *testing.B) {
				if testing.Short() {
					b.Skip("needs RabbitMQ; skipped under -short")
				}
				exchange := amqptest.Unique("bench.publish")
				pub := amqpbus.New(amqpbus.Config{URL: url, Exchange: exchange, Name: exchange})
				defer pub.Close()
				msgs := make([]bus.Message, batch)
				for i := range msgs {
					msgs[i] = bus.Message{RoutingKey: "configmaps.added", ID: fmt.Sprint(i), Body: body}
				}
				// The first publish declares the exchange.
				if err := pub.Publish(b.Context(), msgs[0]); err != nil {
					b.Fatalf("RabbitMQ unreachable at %s (set MINIK8S_AMQP_URL): %v", url, err)
				}
				cleanup := declare(b, url, exchange, queued)
				defer cleanup()
				for b.Loop() {
					if err := pub.Publish(b.Context(), msgs...); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// declare optionally binds a durable queue to exchange (so publishes are
// persisted before they are confirmed) and returns what removes both.
func declare(b *testing.B, url, exchange string, queued bool) func() {
	b.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		b.Fatalf("RabbitMQ unreachable at %s: %v", url, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if queued {
		if _, err := ch.QueueDeclare(exchange, true, false, false, false, nil); err != nil {
			b.Fatal(err)
		}
		if err := ch.QueueBind(exchange, "#", exchange, false, nil); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		if queued {
			_, _ = ch.QueueDelete(exchange, false, false, false)
		}
		_ = ch.ExchangeDelete(exchange, false, false)
		_ = conn.Close()
	}
}
