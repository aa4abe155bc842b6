package outbox

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"minik8s.io/apiserver/internal/storage/etcdstore/etcdtest"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// BenchmarkRabbitMQEndToEnd measures from a put's return to the consumer's
// receipt through the outbox and RabbitMQ, at a paced rate of about 500
// changes per second. Run: go test -run '^$' -bench RabbitMQ -benchtime 2000x
func BenchmarkRabbitMQEndToEnd(b *testing.B) {
	url := amqptest.URL()
	if testing.Short() {
		b.Skip("needs RabbitMQ")
	}
	c := etcdtest.Start(b).Client
	exchange := amqptest.Unique("outboxbench")
	pub := amqpbus.New(amqpbus.Config{URL: url, Exchange: exchange, Name: exchange + ".outbox"})
	sub := amqpbus.New(amqpbus.Config{URL: url, Exchange: exchange, Name: exchange + ".consumer"})
	defer pub.Close()
	defer amqptest.DeleteExchange(b, exchange)

	var mu sync.Mutex
	received := map[int64]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	go func() {
		_ = sub.Consume(ctx, bus.Subscription{Queue: exchange + ".q", Bindings: []string{"#"}, Prefetch: 256,
			OnConnect: func(context.Context) error { close(ready); return nil },
			Handler: func(_ context.Context, d bus.Delivery) error {
				rv, _ := strconv.ParseInt(d.Headers[bus.HeaderResourceVersion], 10, 64)
				mu.Lock()
				received[rv] = time.Now()
				mu.Unlock()
				return nil
			}})
	}()
	<-ready
	o, err := New(Config{Client: c, Publisher: pub})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = o.Start(ctx) }()

	sent := make(map[int64]time.Time, b.N)
	b.ResetTimer()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for i := range b.N {
		<-tick.C
		resp, err := c.Put(ctx, fmt.Sprintf("/registry/configmaps/default/c%d", i%100), `{"kind":"ConfigMap","metadata":{"name":"c"}}`)
		if err != nil {
			b.Fatal(err)
		}
		sent[resp.Header.Revision] = time.Now()
	}
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(received)
		mu.Unlock()
		if n >= b.N {
			break
		}
		if time.Now().After(end) {
			b.Fatalf("only %d of %d changes arrived", n, b.N)
		}
	}
	b.StopTimer()
	var lat []time.Duration
	mu.Lock()
	for rv, at := range sent {
		lat = append(lat, received[rv].Sub(at))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	cancel()
}
