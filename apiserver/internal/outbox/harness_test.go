package outbox

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/shared/bus"
)

const deadline = 60 * time.Second

// change is one message the test expects, derived from what etcd recorded.
type change struct {
	ID     string
	Key    string
	Type   string
	Object map[string]any
}

// writer changes etcd and records the message each change must produce.
type writer struct {
	t      *testing.T
	c      *clientv3.Client
	values map[string]string
	want   []change
}

func newWriter(t *testing.T, c *clientv3.Client) *writer {
	return &writer{t: t, c: c, values: map[string]string{}}
}

// expect records the message of a change; prev is the value a modification replaced ("" for
// the others), which routing compares with to tell a pod's status-only change.
func (w *writer) expect(key, typ, value, prev string, rev int64) {
	w.t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(value), &obj); err != nil {
		w.t.Fatal(err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	meta["resourceVersion"] = strconv.FormatInt(rev, 10)
	resource, ns, name, err := parseKey(DefaultPrefix, key)
	if err != nil {
		w.t.Fatal(err)
	}
	w.want = append(w.want, change{ID: key + "@" + strconv.FormatInt(rev, 10),
		Key: bus.RoutingKey(resource, ns, name, []byte(value), []byte(prev), typ), Type: typ, Object: obj})
}

func (w *writer) put(key, value string) int64 {
	w.t.Helper()
	resp, err := w.c.Put(w.t.Context(), key, value)
	if err != nil {
		w.t.Fatalf("put %s: %v", key, err)
	}
	typ := bus.Modified
	prev, ok := w.values[key]
	if !ok {
		typ = bus.Added
	}
	w.values[key] = value
	w.expect(key, typ, value, prev, resp.Header.Revision)
	return resp.Header.Revision
}

func (w *writer) del(key string) {
	w.t.Helper()
	resp, err := w.c.Delete(w.t.Context(), key)
	if err != nil || resp.Deleted != 1 {
		w.t.Fatalf("delete %s: %v (deleted %d)", key, err, resp.Deleted)
	}
	w.expect(key, bus.Deleted, w.values[key], "", resp.Header.Revision)
	delete(w.values, key)
}

// putBoth writes two keys in one transaction, so one revision.
func (w *writer) putBoth(k1, v1, k2, v2 string) {
	w.t.Helper()
	resp, err := w.c.Txn(w.t.Context()).Then(clientv3.OpPut(k1, v1), clientv3.OpPut(k2, v2)).Commit()
	if err != nil {
		w.t.Fatal(err)
	}
	for _, kv := range [][2]string{{k1, v1}, {k2, v2}} {
		typ := bus.Modified
		prev, ok := w.values[kv[0]]
		if !ok {
			typ = bus.Added
		}
		w.values[kv[0]] = kv[1]
		w.expect(kv[0], typ, kv[1], prev, resp.Header.Revision)
	}
}

// collector records every delivery of a consumer.
type collector struct {
	mu  sync.Mutex
	got []change
}

func (c *collector) handle(_ context.Context, d bus.Delivery) error {
	ev, err := bus.DecodeEvent(d.Body)
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, change{ID: d.ID, Key: d.RoutingKey, Type: ev.Type, Object: obj})
	return nil
}

func (c *collector) snapshot() []change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]change(nil), c.got...)
}

// unique drops repeated IDs, keeping first occurrences: at-least-once delivery
// may repeat a change, never reorder or lose one.
func unique(in []change) []change {
	seen := map[string]bool{}
	var out []change
	for _, c := range in {
		if !seen[c.ID] {
			seen[c.ID] = true
			out = append(out, c)
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", deadline, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitChanges waits until the unique deliveries number len(want) and diffs them.
func waitChanges(t *testing.T, c *collector, want []change) {
	t.Helper()
	waitFor(t, strconv.Itoa(len(want))+" changes", func() bool { return len(unique(c.snapshot())) >= len(want) })
	if diff := cmp.Diff(want, unique(c.snapshot())); diff != "" {
		t.Fatalf("published changes (-want +got):\n%s", diff)
	}
}

// consume runs sub on b in the background until cleanup; it returns once the
// queue is bound.
func consume(t *testing.T, b bus.Consumer, queue string, c *collector) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Consume(ctx, bus.Subscription{Queue: queue, Bindings: []string{"#"}, Handler: c.handle,
			OnConnect: func(context.Context) error { once.Do(func() { close(ready) }); return nil }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-time.After(deadline):
		t.Fatal("consumer never connected")
	}
}

// run starts an outbox and returns a stop function that cancels it and waits.
func run(t *testing.T, o *Outbox) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- o.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Start returned %v, want nil on cancel", err)
				}
			case <-time.After(deadline):
				t.Errorf("Start did not return within %v of cancel", deadline)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func newOutbox(t *testing.T, c *clientv3.Client, p bus.Publisher) *Outbox {
	t.Helper()
	o, err := New(Config{Client: c, Publisher: p, Logger: testLogger(t),
		Retry: bus.Backoff{Initial: 10 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// revOf returns the revision in a message ID "<key>@<revision>".
func revOf(t *testing.T, id string) int64 {
	t.Helper()
	i := strings.LastIndex(id, "@")
	rev, err := strconv.ParseInt(id[i+1:], 10, 64)
	if i < 0 || err != nil {
		t.Fatalf("bad message ID %q", id)
	}
	return rev
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}
