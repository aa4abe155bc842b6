package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
)

// eventWindows is how many slices of the event test the report shows the
// p99 of.
const eventWindows = 4

// sentAtKey is the ConfigMap data key that carries the send time in Unix
// nanoseconds; sender and receivers share the machine's clock.
const sentAtKey = "sentAt"

// stamped is the part of a stored ConfigMap the receivers read.
type stamped struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Data map[string]string `json:"data"`
}

// decodeStamp returns the name and send time of a ConfigMap's JSON.
func decodeStamp(obj []byte) (string, time.Time, error) {
	var s stamped
	if err := json.Unmarshal(obj, &s); err != nil {
		return "", time.Time{}, fmt.Errorf("decode configmap: %w", err)
	}
	ns, err := strconv.ParseInt(s.Data[sentAtKey], 10, 64)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("configmap %s: %s: %w", s.Metadata.Name, sentAtKey, err)
	}
	return s.Metadata.Name, time.Unix(0, ns), nil
}

// firsts records a latency per name once: the bus delivers at least once,
// and a redelivery is not a second change.
type firsts struct {
	mu   sync.Mutex
	seen map[string]bool
	rec  *stats.Recorder
	sent []time.Time // send time of each recorded sample, in arrival order
	lat  []time.Duration
}

func newFirsts(n int) *firsts {
	return &firsts{seen: make(map[string]bool, n), rec: stats.NewRecorder(n),
		sent: make([]time.Time, 0, n), lat: make([]time.Duration, 0, n)}
}

func (f *firsts) add(name string, sent time.Time, latency time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[name] {
		return
	}
	f.seen[name] = true
	f.rec.Add(latency)
	f.sent = append(f.sent, sent)
	f.lat = append(f.lat, latency)
}

// windows summarises the samples by when they were sent, in n equal slices
// of [start, end): a backlog that builds up shows as a rising p99, a warm-up
// stall as a high first slice.
func (f *firsts) windows(start, end time.Time, n int) []stats.Summary {
	f.mu.Lock()
	defer f.mu.Unlock()
	return windows(f.sent, f.lat, start, end, n)
}

func windows(sent []time.Time, lat []time.Duration, start, end time.Time, n int) []stats.Summary {
	width := end.Sub(start) / time.Duration(n)
	if width <= 0 {
		return nil
	}
	parts := make([][]time.Duration, n)
	for i, at := range sent {
		k := min(max(int(at.Sub(start)/width), 0), n-1)
		parts[k] = append(parts[k], lat[i])
	}
	out := make([]stats.Summary, n)
	for k, p := range parts {
		out[k] = stats.Summarize(p)
	}
	return out
}

// busFilter selects the deliveries of this run: the exchange is shared with
// every apiserver on the broker, so other runs' ConfigMaps arrive too.
func busFilter(d bus.Delivery, prefix string) bool {
	return d.Headers[bus.HeaderNamespace] == Namespace && strings.HasPrefix(d.Headers[bus.HeaderName], prefix)
}

// events runs test 3: paced creates, each stamped with its send time, timed
// at a RabbitMQ consumer and at a raw etcd watch on the same keys.
func (e *env) events(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	n := int(float64(cfg.EventRate) * cfg.EventTime.Seconds())
	prefix := "ev-" + e.runID + "-"
	viaBus, viaWatch := newFirsts(n), newFirsts(n)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The raw baseline: a watch on exactly the keys the test creates.
	wch := e.etcd.Watch(ctx, "/registry/configmaps/"+Namespace+"/"+prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	select {
	case resp := <-wch:
		if err := resp.Err(); err != nil || !resp.Created {
			return fmt.Errorf("start etcd watch: created=%v: %v", resp.Created, err)
		}
	case <-time.After(30 * time.Second):
		return errors.New("etcd watch not established after 30s")
	}
	go func() {
		for resp := range wch {
			now := time.Now()
			for _, ev := range resp.Events {
				if !ev.IsCreate() {
					continue
				}
				if name, sent, err := decodeStamp(ev.Kv.Value); err == nil {
					viaWatch.add(name, sent, now.Sub(sent))
				}
			}
		}
	}()

	queue := "bench." + e.runID
	stopConsumer, err := e.consume(ctx, queue, func(_ context.Context, d bus.Delivery) error {
		now := time.Now()
		if !busFilter(d, prefix) {
			return nil
		}
		ev, err := bus.DecodeEvent(d.Body)
		if err != nil || ev.Type != bus.Added {
			return nil //nolint:nilerr // not a change this test made; acknowledge and move on
		}
		if name, sent, err := decodeStamp(ev.Object); err == nil {
			viaBus.add(name, sent, now.Sub(sent))
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer stopConsumer()

	before, err := e.scrapeHistogram(ctx, outboxLatencyMetric, nil)
	if err != nil {
		return err
	}
	var prof *profile
	if cfg.Profile {
		prof = e.startProfile(ctx, "events", cfg.EventTime)
	}
	start := time.Now()
	sent, elapsed, err := e.paced(ctx, n, prefix)
	if err != nil {
		return err
	}
	rep.EventsSent, rep.EventRate = sent, stats.Rate(sent, elapsed)
	// Wait for stragglers; a missing event is reported, not waited for
	// forever.
	deadline := time.Now().Add(60 * time.Second)
	for (viaBus.rec.Len() < sent || viaWatch.rec.Len() < sent) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if prof != nil {
		rep.Profiles = append(rep.Profiles, prof.wait())
	}
	rep.EventBus, rep.EventWatch = viaBus.rec.Summary(), viaWatch.rec.Summary()
	rep.EventBusWindows = viaBus.windows(start, start.Add(elapsed), eventWindows)
	rep.EventWatchWindows = viaWatch.windows(start, start.Add(elapsed), eventWindows)
	// A consumer may have a message before the apiserver has handled the broker's confirm of
	// it, which is when the outbox counts it: give the last confirms a moment.
	var h histogram
	for confirmDeadline := time.Now().Add(5 * time.Second); ; {
		after, err := e.scrapeHistogram(ctx, outboxLatencyMetric, nil)
		if err != nil {
			return err
		}
		h = after.since(before)
		if int(h.total()) >= sent || time.Now().After(confirmDeadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	rep.OutboxPublished = int(h.total())
	rep.OutboxP50, rep.OutboxP99 = h.quantile(50), h.quantile(99)
	return nil
}

// consume starts a consumer of queue bound to the ConfigMap keys and returns
// once it is bound. The returned stop ends it and deletes the queue, which is
// durable and would otherwise keep collecting messages after the run.
func (e *env) consume(ctx context.Context, queue string, h bus.Handler) (stop func(), err error) {
	b := amqpbus.New(amqpbus.Config{URL: e.cfg.AMQPURL, Name: "bench-" + e.runID, Logger: e.log.With("component", "bus")})
	bound := make(chan struct{})
	var once sync.Once
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.Consume(cctx, bus.Subscription{
			Queue:    queue,
			Bindings: []string{"configmaps.#"},
			Prefetch: 1000,
			Handler:  h,
			OnConnect: func(context.Context) error {
				once.Do(func() { close(bound) })
				return nil
			},
		})
	}()
	stop = func() {
		cancel()
		<-done
		if err := deleteQueue(e.cfg.AMQPURL, queue); err != nil {
			e.log.Warn("deleting benchmark queue", "queue", queue, "err", err)
		}
	}
	select {
	case <-bound:
		return stop, nil
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("consume %s: %w", queue, err)
	case <-time.After(30 * time.Second):
		stop()
		return nil, fmt.Errorf("RabbitMQ consumer not bound after 30s: is RabbitMQ reachable at %s?", e.cfg.AMQPURL)
	}
}

func deleteQueue(url, queue string) error {
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	defer ch.Close()
	_, err = ch.QueueDelete(queue, false, false, false)
	return err
}

// paced creates n stamped ConfigMaps at EventRate per second. Each create is
// due at a fixed offset from the start, so a late one does not push back the
// rest; the stamp is the real send time, so a late send does not count as
// latency downstream. It returns the creates made and the time they took.
func (e *env) paced(ctx context.Context, n int, prefix string) (int, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	interval := time.Second / time.Duration(e.cfg.EventRate)
	jobs := make(chan int)
	start := time.Now()
	go func() {
		defer close(jobs)
		for i := range n {
			if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
			select {
			case <-ctx.Done():
				return
			case jobs <- i:
			}
		}
	}()
	var mu sync.Mutex
	sent := 0
	var wg sync.WaitGroup
	for range e.cfg.EventWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if _, err := e.create(ctx, e.cms, prefix+strconv.Itoa(i), time.Now()); err != nil {
					cancel(err)
					return
				}
				mu.Lock()
				sent++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, 0, err
	}
	return sent, took, nil
}
