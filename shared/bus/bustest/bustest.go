package bustest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/shared/bus"
)

// Bus is what an implementation under test provides.
type Bus interface {
	bus.Publisher
	bus.Consumer
}

// Env is one isolated bus for one subtest.
type Env struct {
	Bus Bus
	// Disconnect forcibly closes the broker connections of Bus (at least the
	// consumers'), as a broker restart or a network cut would.
	Disconnect func(t *testing.T)
}

// Factory builds a fresh Env; it registers its own cleanup with t.
type Factory func(t *testing.T) Env

// Deadline bounds every wait in the suite. It is generous on purpose: it only
// decides how long a broken implementation takes to fail.
const Deadline = 60 * time.Second

// fastRetry keeps redelivery quick in tests without changing its shape.
var fastRetry = bus.Backoff{Initial: 5 * time.Millisecond, Max: 50 * time.Millisecond}

// Run runs the contract suite against buses built by newEnv.
func Run(t *testing.T, newEnv Factory) {
	t.Run("RoutesByPattern", func(t *testing.T) { testRouting(t, newEnv(t)) })
	t.Run("RedeliversInOrderOnHandlerError", func(t *testing.T) { testRedelivery(t, newEnv(t)) })
	t.Run("DropsAfterMaxAttempts", func(t *testing.T) { testMaxAttempts(t, newEnv(t)) })
	t.Run("NoAckDropsWhatItsHandlerFails", func(t *testing.T) { testNoAck(t, newEnv(t)) })
	t.Run("QueueSurvivesConsumerRestart", func(t *testing.T) { testDurable(t, newEnv(t)) })
	t.Run("UnbindDropsAnOlderVersionsBinding", func(t *testing.T) { testUnbind(t, newEnv(t)) })
	t.Run("OnConnectAfterForcedDisconnect", func(t *testing.T) { testReconnect(t, newEnv(t)) })
	t.Run("PreservesPerKeyOrder", func(t *testing.T) { testOrder(t, newEnv(t)) })
}

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9]+`)

// QueueName returns a queue name unique to this test run, prefixed "bustest."
// so that adapters' cleanups can find leftovers.
func QueueName(t *testing.T, suffix string) string {
	return fmt.Sprintf("bustest.%s.%s.%08x", unsafeChars.ReplaceAllString(t.Name(), "-"), suffix, rand.Uint32())
}

// record is what a handler saw.
type record struct {
	ID          string
	Key         string
	Attempt     int
	Redelivered bool
	Err         bool
}

type recorder struct {
	mu   sync.Mutex
	recs []record
	log  []string // "connect" and "msg:<id>" in the order they happened
}

func (r *recorder) add(d bus.Delivery, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, record{ID: d.ID, Key: d.RoutingKey, Attempt: d.Attempt, Redelivered: d.Redelivered, Err: err != nil})
	if err == nil {
		r.log = append(r.log, "msg:"+d.ID)
	}
}

func (r *recorder) connected() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "connect")
}

func (r *recorder) snapshot() ([]record, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs), slices.Clone(r.log)
}

// okIDs returns the IDs handled successfully, in order.
func (r *recorder) okIDs() []string {
	recs, _ := r.snapshot()
	var out []string
	for _, rc := range recs {
		if !rc.Err {
			out = append(out, rc.ID)
		}
	}
	return out
}

func (r *recorder) connects() int {
	_, log := r.snapshot()
	n := 0
	for _, l := range log {
		if l == "connect" {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds or Deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", Deadline, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// consume runs b.Consume in the background, recording into rec, and returns
// once the first OnConnect has run (so bindings exist). failFor decides
// whether a delivery's handler call fails.
func consume(t *testing.T, b Bus, sub bus.Subscription, rec *recorder, failFor func(bus.Delivery) bool) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	sub.Handler = func(ctx context.Context, d bus.Delivery) error {
		var err error
		if failFor != nil && failFor(d) {
			err = errors.New("injected handler failure")
		}
		rec.add(d, err)
		return err
	}
	sub.OnConnect = func(context.Context) error {
		rec.connected()
		return nil
	}
	if sub.Retry == (bus.Backoff{}) {
		sub.Retry = fastRetry
	}
	before := rec.connects()
	done := make(chan error, 1)
	go func() { done <- b.Consume(ctx, sub) }()
	waitFor(t, "consumer of "+sub.Queue+" to connect", func() bool {
		select {
		case err := <-done:
			done <- err
			return true
		default:
		}
		return rec.connects() > before
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Consume(%s) returned %v after cancel, want nil", sub.Queue, err)
				}
			case <-time.After(Deadline):
				t.Errorf("Consume(%s) did not return within %v of cancel", sub.Queue, Deadline)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// publish publishes msgs, retrying while the implementation reconnects.
func publish(t *testing.T, b Bus, msgs ...bus.Message) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := b.Publish(ctx, msgs...)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Publish failed until the deadline: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func msg(key, id string) bus.Message {
	return bus.Message{
		RoutingKey: key,
		ID:         id,
		Body:       []byte(`{"type":"ADDED","object":{"id":"` + id + `"}}`),
		Headers:    map[string]string{bus.HeaderName: id},
	}
}

func testRouting(t *testing.T, env Env) {
	subs := map[string][]string{
		"a": {"pods.node.n1_x.*", "fence.#"},
		"b": {"pods.unscheduled.*", "deployments.*", "fence.#"},
		"c": {"pods.#", "fence.#"},
	}
	recs := map[string]*recorder{}
	for name, patterns := range subs {
		recs[name] = &recorder{}
		consume(t, env.Bus, bus.Subscription{Queue: QueueName(t, name), Bindings: patterns}, recs[name], nil)
	}
	keys := []string{"pods.node.n1_x.added", "pods.node.n2.added", "pods.unscheduled.added",
		"deployments.modified", "services.added", "pods.node.n1_x.deleted", "fence.end"}
	var msgs []bus.Message
	for i, k := range keys {
		msgs = append(msgs, msg(k, strconv.Itoa(i)))
	}
	publish(t, env.Bus, msgs...)

	want := map[string][]string{
		"a": {"pods.node.n1_x.added", "pods.node.n1_x.deleted", "fence.end"},
		"b": {"pods.unscheduled.added", "deployments.modified", "fence.end"},
		"c": {"pods.node.n1_x.added", "pods.node.n2.added", "pods.unscheduled.added", "pods.node.n1_x.deleted", "fence.end"},
	}
	for name, rec := range recs {
		// Everything routed to a queue arrives before the fence, so once the
		// fence is in, the list is complete.
		waitFor(t, "fence in queue "+name, func() bool { return slices.Contains(rec.okIDs(), "6") })
		got, _ := rec.snapshot()
		var gotKeys []string
		for _, r := range got {
			gotKeys = append(gotKeys, r.Key)
		}
		if diff := cmp.Diff(want[name], gotKeys); diff != "" {
			t.Errorf("queue %s keys (-want +got):\n%s", name, diff)
		}
	}
	// The whole message travels: body, ID and headers.
	var got bus.Message
	one := &recorder{}
	q := QueueName(t, "body")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	gotCh := make(chan bus.Message, 1)
	ready := make(chan struct{})
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		_ = env.Bus.Consume(ctx, bus.Subscription{Queue: q, Bindings: []string{"body.*"}, Retry: fastRetry,
			OnConnect: func(context.Context) error { one.connected(); close(ready); return nil },
			Handler: func(_ context.Context, d bus.Delivery) error {
				select {
				case gotCh <- d.Message:
				default:
				}
				return nil
			}})
	}()
	select {
	case <-ready:
	case <-time.After(Deadline):
		t.Fatal("body consumer never connected")
	}
	sent := bus.Message{RoutingKey: "body.x", ID: "id-1", Body: []byte(`{"type":"DELETED","object":{}}`),
		Headers: map[string]string{bus.HeaderResource: "pods", bus.HeaderNamespace: "ns", bus.HeaderName: "n", bus.HeaderResourceVersion: "42"}}
	publish(t, env.Bus, sent)
	select {
	case got = <-gotCh:
	case <-time.After(Deadline):
		t.Fatal("message never delivered")
	}
	if diff := cmp.Diff(sent, got); diff != "" {
		t.Errorf("delivered message (-sent +got):\n%s", diff)
	}
}

func testRedelivery(t *testing.T, env Env) {
	rec := &recorder{}
	consume(t, env.Bus, bus.Subscription{Queue: QueueName(t, "q"), Bindings: []string{"x.*"}, Prefetch: 10}, rec,
		func(d bus.Delivery) bool { return d.ID == "m2" && d.Attempt <= 2 })
	publish(t, env.Bus, msg("x.a", "m1"), msg("x.a", "m2"), msg("x.a", "m3"), msg("x.a", "m4"))
	waitFor(t, "m4 handled", func() bool { return slices.Contains(rec.okIDs(), "m4") })

	got, _ := rec.snapshot()
	want := []record{
		{ID: "m1", Key: "x.a", Attempt: 1},
		{ID: "m2", Key: "x.a", Attempt: 1, Err: true},
		{ID: "m2", Key: "x.a", Attempt: 2, Redelivered: true, Err: true},
		{ID: "m2", Key: "x.a", Attempt: 3, Redelivered: true},
		{ID: "m3", Key: "x.a", Attempt: 1},
		{ID: "m4", Key: "x.a", Attempt: 1},
	}
	// m3 and m4 may also come back marked redelivered (they were in flight when
	// m2 failed); that flag is the broker's business, the order is not.
	for i := range got {
		if got[i].ID == "m3" || got[i].ID == "m4" {
			got[i].Redelivered = false
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
}

func testMaxAttempts(t *testing.T, env Env) {
	rec := &recorder{}
	consume(t, env.Bus, bus.Subscription{Queue: QueueName(t, "q"), Bindings: []string{"x.*"}, MaxAttempts: 3}, rec,
		func(d bus.Delivery) bool { return d.ID == "poison" })
	publish(t, env.Bus, msg("x.a", "poison"), msg("x.a", "next"))
	waitFor(t, "message after the poisoned one", func() bool { return slices.Contains(rec.okIDs(), "next") })
	got, _ := rec.snapshot()
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	if diff := cmp.Diff([]string{"poison", "poison", "poison", "next"}, ids); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
}

// A no-ack subscription starts from its OnConnect relist, so what waited in the queue is
// dropped; then it gets every message once, in order, and one its handler fails is gone.
func testNoAck(t *testing.T, env Env) {
	q := QueueName(t, "q")
	stop := consume(t, env.Bus, bus.Subscription{Queue: q, Bindings: []string{"x.*"}}, &recorder{}, nil)
	stop()
	publish(t, env.Bus, msg("x.a", "stale"))
	rec := &recorder{}
	consume(t, env.Bus, bus.Subscription{Queue: q, Bindings: []string{"x.*"}, NoAck: true, Retry: fastRetry}, rec,
		func(d bus.Delivery) bool { return d.ID == "m2" })
	publish(t, env.Bus, msg("x.a", "m1"), msg("x.a", "m2"), msg("x.b", "m3"))
	waitFor(t, "m3 handled", func() bool { return slices.Contains(rec.okIDs(), "m3") })
	// A message sent after m3 fences off a late redelivery of m2.
	publish(t, env.Bus, msg("x.a", "m4"))
	waitFor(t, "m4 handled", func() bool { return slices.Contains(rec.okIDs(), "m4") })
	got, _ := rec.snapshot()
	want := []record{
		{ID: "m1", Key: "x.a", Attempt: 1},
		{ID: "m2", Key: "x.a", Attempt: 1, Err: true},
		{ID: "m3", Key: "x.b", Attempt: 1},
		{ID: "m4", Key: "x.a", Attempt: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
}

func testDurable(t *testing.T, env Env) {
	q := QueueName(t, "q")
	first := &recorder{}
	stop := consume(t, env.Bus, bus.Subscription{Queue: q, Bindings: []string{"d.#"}}, first, nil)
	publish(t, env.Bus, msg("d.x", "a"))
	waitFor(t, "a handled", func() bool { return slices.Contains(first.okIDs(), "a") })
	stop()

	// No consumer now: the durable queue must keep what is routed to it.
	publish(t, env.Bus, msg("d.x", "b"), msg("d.y.z", "c"))

	second := &recorder{}
	consume(t, env.Bus, bus.Subscription{Queue: q, Bindings: []string{"d.#"}}, second, nil)
	waitFor(t, "b and c after restart", func() bool { return len(second.okIDs()) >= 2 })
	publish(t, env.Bus, msg("d.x", "fence"))
	waitFor(t, "fence", func() bool { return slices.Contains(second.okIDs(), "fence") })
	if diff := cmp.Diff([]string{"b", "c", "fence"}, second.okIDs()); diff != "" {
		t.Errorf("second consumer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a"}, first.okIDs()); diff != "" {
		t.Errorf("first consumer (-want +got):\n%s", diff)
	}
}

// A consumer that narrowed its bindings unbinds the old, wider pattern, which the durable
// queue would otherwise keep; unbinding a pattern that is not bound is no error.
func testUnbind(t *testing.T, env Env) {
	q := QueueName(t, "q")
	old := &recorder{}
	stop := consume(t, env.Bus, bus.Subscription{Queue: q, Bindings: []string{"u.#"}}, old, nil)
	stop()

	narrowed := &recorder{}
	consume(t, env.Bus, bus.Subscription{Queue: q, Bindings: []string{"u.keep", "fence.#"},
		Unbind: []string{"u.#", "never.bound"}}, narrowed, nil)
	publish(t, env.Bus, msg("u.drop", "dropped"), msg("u.keep", "kept"), msg("fence.x", "fence"))
	waitFor(t, "fence", func() bool { return slices.Contains(narrowed.okIDs(), "fence") })
	if diff := cmp.Diff([]string{"kept", "fence"}, narrowed.okIDs()); diff != "" {
		t.Errorf("after unbinding u.# (-want +got):\n%s", diff)
	}
}

func testReconnect(t *testing.T, env Env) {
	rec := &recorder{}
	consume(t, env.Bus, bus.Subscription{Queue: QueueName(t, "q"), Bindings: []string{"r.*"}}, rec, nil)
	publish(t, env.Bus, msg("r.x", "before"))
	waitFor(t, "message before disconnect", func() bool { return slices.Contains(rec.okIDs(), "before") })

	env.Disconnect(t)
	waitFor(t, "OnConnect to run again after the forced disconnect", func() bool { return rec.connects() >= 2 })
	publish(t, env.Bus, msg("r.x", "after"))
	waitFor(t, "message after reconnect", func() bool { return slices.Contains(rec.okIDs(), "after") })

	_, log := rec.snapshot()
	if log[0] != "connect" {
		t.Errorf("first event %q, want connect before any delivery; log %v", log[0], log)
	}
	// "before" may legitimately be delivered twice (if the disconnect hit
	// before its ack); "after" must follow the second connect.
	second := slices.Index(log[1:], "connect") + 1
	after := slices.Index(log, "msg:after")
	if second <= 0 || after < second {
		t.Errorf("want a second connect before msg:after; log %v", log)
	}
}

func testOrder(t *testing.T, env Env) {
	const keys, perKey = 5, 60
	rec := &recorder{}
	// Fail the first attempt of every 37th message so order is also checked
	// across redeliveries.
	consume(t, env.Bus, bus.Subscription{Queue: QueueName(t, "q"), Bindings: []string{"o.#"}, Prefetch: 32}, rec,
		func(d bus.Delivery) bool {
			n, _ := strconv.Atoi(d.Headers["n"])
			return n%37 == 0 && d.Attempt == 1
		})

	var all []bus.Message
	n := 0
	for i := range perKey {
		for k := range keys {
			m := msg(fmt.Sprintf("o.k%d.modified", k), fmt.Sprintf("k%d/%d", k, i))
			m.Headers = map[string]string{"n": strconv.Itoa(n)}
			all = append(all, m)
			n++
		}
	}
	// Batches of varied size exercise publish-many-then-wait-for-confirms.
	for i, size := 0, 1; i < len(all); size = size%17 + 1 {
		end := min(i+size, len(all))
		publish(t, env.Bus, all[i:end]...)
		i = end
	}
	waitFor(t, "all messages", func() bool { return len(rec.okIDs()) >= len(all) })

	got := map[string][]string{}
	for _, id := range rec.okIDs() {
		k := id[:2]
		got[k] = append(got[k], id)
	}
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		var want []string
		for i := range perKey {
			want = append(want, fmt.Sprintf("%s/%d", key, i))
		}
		if diff := cmp.Diff(want, got[key]); diff != "" {
			t.Errorf("order of %s (-want +got):\n%s", key, diff)
		}
	}
}
