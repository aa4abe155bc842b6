package outbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"minik8s.io/apiserver/internal/storage/etcdstore/etcdtest"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// TestRabbitMQEndToEnd runs the outbox against real RabbitMQ: every change
// arrives in etcd's order, nothing is lost when the broker drops the
// publisher's connection mid-stream, and a restarted outbox resumes from the
// stored revision.
func TestRabbitMQEndToEnd(t *testing.T) {
	url := amqptest.Require(t)
	c := etcdtest.Start(t).Client
	exchange := amqptest.Unique("outboxtest")
	newBus := func(name string) *amqpbus.Bus {
		b := amqpbus.New(amqpbus.Config{URL: url, Exchange: exchange, Name: exchange + "." + name, Logger: testLogger(t),
			Reconnect: bus.Backoff{Initial: 50 * time.Millisecond, Max: time.Second}})
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	t.Cleanup(func() { amqptest.DeleteExchange(t, exchange) })

	got := &collector{}
	consume(t, newBus("consumer"), exchange+".all", got)
	first := newOutbox(t, c, newBus("outbox1"))
	stop := run(t, first)

	w := newWriter(t, c)
	write := func(round, from, to int) {
		for i := from; i < to; i++ {
			key := fmt.Sprintf("/registry/pods/ns%d/p%d", i%3, i%20)
			switch {
			case round%3 == 2 && w.values[key] != "":
				w.del(key)
			default:
				w.put(key, fmt.Sprintf(`{"kind":"Pod","metadata":{"name":"p%d","namespace":"ns%d"},"spec":{"nodeName":"node.%d"},"status":{"round":%d}}`, i%20, i%3, i%2, round))
			}
		}
	}
	// Make sure the publisher's connection is visible to the management API,
	// so the close below lands while changes are still being published.
	w.put("/registry/nodes/warmup", `{"kind":"Node","metadata":{"name":"warmup"}}`)
	amqptest.WaitForConnection(t, exchange+".outbox1")
	closed := make(chan error, 1)
	for round := range 8 {
		if round == 2 {
			// Cut the publisher off mid-stream, as a broker restart would;
			// the outbox must republish from what was confirmed.
			go func() {
				_, err := amqptest.CloseConnectionsContext(context.WithoutCancel(t.Context()), exchange+".outbox1")
				closed <- err
			}()
		}
		write(round, 0, 20)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	waitChanges(t, got, w.want)
	dups := len(got.snapshot()) - len(w.want)
	t.Logf("%d changes, %d duplicate deliveries, %v publish errors after the forced disconnect",
		len(w.want), dups, testutil.ToFloat64(first.metrics.errors))

	stop()
	stored, err := first.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if last := revOf(t, w.want[len(w.want)-1].ID); stored != last {
		t.Errorf("stored revision %d after a clean stop, want the last published %d", stored, last)
	}
	before := len(got.snapshot())
	write(8, 0, 20) // while no outbox runs
	run(t, newOutbox(t, c, newBus("outbox2")))
	waitChanges(t, got, w.want)
	if n := len(got.snapshot()) - before; n != 20 {
		t.Errorf("restarted outbox delivered %d messages for 20 new changes; it did not resume at the stored revision", n)
	}
}
