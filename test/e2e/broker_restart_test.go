package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/informer"
)

// brokerRestartEnv opts in to the test that restarts RabbitMQ. Restarting the broker cuts
// every other test using it, so `make test` runs this one alone, after the rest.
const brokerRestartEnv = "MINIK8S_E2E_BROKER_RESTART"

// requireBrokerRestart skips a test that restarts the shared RabbitMQ unless it was asked for.
func requireBrokerRestart(t *testing.T) {
	t.Helper()
	if os.Getenv(brokerRestartEnv) == "" {
		t.Skipf("restarts the shared RabbitMQ; set %s=1 to run it (make test does, alone)", brokerRestartEnv)
	}
}

// TestBusAcrossBrokerRestart restarts the RabbitMQ application between two bursts of changes:
// every change still reaches a durable consumer queue, in order per object, as etcd recorded it.
func TestBusAcrossBrokerRestart(t *testing.T) {
	requireBrokerRestart(t)
	requireIntegration(t)
	srv := startServer(t)
	ns := fmt.Sprintf("e2e-broker-%08x", rand.Uint32())
	ours := func(resource, namespace, name string) bool {
		return namespace == ns || (resource == "namespaces" && name == ns)
	}
	rec := consumeDurably(t, srv.amqpURL, func(h map[string]string) bool {
		return ours(h[bus.HeaderResource], h[bus.HeaderNamespace], h[bus.HeaderName])
	})
	from := etcdRevision(t, srv) + 1
	w := newWriter(t, srv, ns)
	w.createNamespace()
	w.churn("a", 6)
	checkBus(t, srv, rec, from, ours)

	restartBroker(t)
	w.churn("b", 6)
	w.pod("p1", "node-1")
	checkBus(t, srv, rec, from, ours)
}

// restartBroker stops and starts the RabbitMQ application; durable queues and their bindings
// survive, connections and (transient) queued messages do not.
func restartBroker(t *testing.T) {
	t.Helper()
	for _, args := range [][]string{{"stop_app"}, {"start_app"}, {"await_startup"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, "rabbitmqctl", args...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("rabbitmqctl %s: %v\n%s", args[0], err, out)
		}
	}
}

// consumeDurably records the test's messages through shared/bus's consumer, which reconnects
// after the broker restarts; the queue is durable, so nothing published meanwhile is lost.
func consumeDurably(t *testing.T, amqpURL string, keep func(h map[string]string) bool) *recorder {
	t.Helper()
	queue := amqptest.Unique("e2e.restart")
	b := amqpbus.New(amqpbus.Config{URL: amqpURL, Name: queue, Reconnect: bus.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}})
	rec := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	connected := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := b.Consume(ctx, bus.Subscription{
			Queue:    queue,
			Bindings: []string{"#"},
			OnConnect: func(context.Context) error {
				select {
				case connected <- struct{}{}:
				default:
				}
				return nil
			},
			Handler: func(_ context.Context, d bus.Delivery) error {
				if keep(d.Headers) {
					rec.mu.Lock()
					rec.msgs = append(rec.msgs, received{id: d.ID, routingKey: d.RoutingKey, headers: d.Headers, body: d.Body})
					rec.mu.Unlock()
				}
				return nil
			},
		})
		if err != nil {
			rec.mu.Lock()
			rec.errs = append(rec.errs, err)
			rec.mu.Unlock()
		}
	}()
	select {
	case <-connected:
	case <-time.After(60 * time.Second):
		t.Fatal("the consumer did not connect within 60s")
	}
	t.Cleanup(func() {
		cancel()
		<-done
		_ = b.Close()
		conn, err := amqp.Dial(amqpURL)
		if err != nil {
			t.Errorf("delete queue %s: %v", queue, err)
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(queue, false, false, false)
		}
	})
	return rec
}

// TestBusAcrossBrokerRestartRelist shows what the bus's guarantee rests on, now that messages
// are transient: a broker restart loses what a durable queue held, and the consumer's relist
// on reconnect (what every component's OnConnect does) repairs the loss.
func TestBusAcrossBrokerRestartRelist(t *testing.T) {
	requireBrokerRestart(t)
	requireIntegration(t)
	srv := startServer(t)
	ns := fmt.Sprintf("e2e-relist-%08x", rand.Uint32())
	w := newWriter(t, srv, ns)
	w.createNamespace()

	// A pods cache fed by the bus, relisting on every connect, as the scheduler's is.
	inf := informer.New(informer.Config{Name: "pods", ListerWatcher: informer.ForNamespace(w.pods, ns),
		NoWatch: true, RelistPeriod: time.Hour, FirstListWait: time.Minute})
	infCtx, stopInf := context.WithCancel(context.Background())
	infDone := make(chan struct{})
	go func() { defer close(infDone); _ = inf.Start(infCtx) }()
	t.Cleanup(func() { stopInf(); <-infDone })
	queue := amqptest.Unique("e2e.relist")
	consume := func() (stop func()) {
		b := amqpbus.New(amqpbus.Config{URL: srv.amqpURL, Name: queue, Reconnect: bus.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second}})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = b.Consume(ctx, bus.Subscription{Queue: queue, Bindings: []string{"pods.#"},
				OnConnect: func(context.Context) error { inf.RequestRelist(); return nil },
				Handler: func(_ context.Context, d bus.Delivery) error {
					if d.Headers[bus.HeaderNamespace] == ns {
						_, _ = inf.ApplyEvent(d.Body, &corev1.Pod{})
					}
					return nil
				}})
		}()
		return func() { cancel(); <-done; _ = b.Close() }
	}
	has := func(name string) bool {
		_, ok := inf.Store().Get(ns + "/" + name)
		return ok
	}
	// queued counts the queue's ready messages as the broker itself does (a passive declare),
	// not from the management statistics, which lag and are empty right after a restart.
	queued := func() int {
		conn, err := amqp.Dial(srv.amqpURL)
		if err != nil {
			return -1 // the broker is still coming back
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return -1
		}
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			t.Fatalf("queue %s after the restart: %v (a durable queue must survive it)", queue, err)
		}
		return q.Messages
	}

	stop := consume()
	w.pod("before", "node-1")
	eventually(t, busTimeout, "pod before in the cache, through the bus", func() bool { return has("before") })
	stop()

	// With no consumer the durable queue keeps the new pod's messages, until the broker restarts.
	w.pod("lost", "node-1")
	eventually(t, busTimeout, "the pod's messages queued", func() bool { return queued() > 0 })
	restartBroker(t)
	eventually(t, busTimeout, "the broker back", func() bool { return queued() >= 0 })
	if n := queued(); n != 0 {
		t.Fatalf("%d messages survived the restart: messages are transient, they should not", n)
	}
	if has("lost") {
		t.Fatal("the cache has pod lost before any relist: the test proves nothing")
	}

	// The consumer reconnects, relists, and the cache has the pod whose messages were lost.
	defer consume()()
	eventually(t, busTimeout, "pod lost in the cache, through the relist on reconnect", func() bool { return has("lost") })
}
