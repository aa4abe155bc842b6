package amqpbus_test

import (
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
