package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/apiserver/internal/storage"
)

// receive returns the next result of a watch; ok is false when the channel closed.
func receive(t *testing.T, ch <-chan storage.WatchResult) (res storage.WatchResult, ok bool) {
	t.Helper()
	select {
	case res, ok = <-ch:
		return res, ok
	case <-time.After(Deadline):
		t.Fatalf("no watch result within %v", Deadline)
		return res, false
	}
}

// collectUntil returns a watch's events up to and including the first that last says is the
// last, failing on an error or a closed channel.
func collectUntil(t *testing.T, ch <-chan storage.WatchResult, last func(storage.Event) bool) []storage.Event {
	t.Helper()
	var evs []storage.Event
	for {
		res, ok := receive(t, ch)
		if !ok {
			t.Fatalf("watch closed after %d events", len(evs))
		}
		if res.Err != nil {
			t.Fatalf("watch failed after %d events: %v", len(evs), res.Err)
		}
		for i, ev := range res.Events {
			evs = append(evs, ev)
			if last(ev) {
				if rest := res.Events[i+1:]; len(rest) > 0 {
					t.Fatalf("watch delivered %d events after the last one expected: %+v", len(rest), rest)
				}
				return evs
			}
		}
	}
}

// collect returns a watch's first n events.
func collect(t *testing.T, ch <-chan storage.WatchResult, n int) []storage.Event {
	t.Helper()
	seen := 0
	return collectUntil(t, ch, func(storage.Event) bool { seen++; return seen == n })
}

// wantClosed fails t unless ch closes, whatever it delivers first.
func wantClosed(t *testing.T, ch <-chan storage.WatchResult) {
	t.Helper()
	for {
		if _, ok := receive(t, ch); !ok {
			return
		}
	}
}

// testWatchFromRevision starts watches from every revision of a history (and from its end)
// and checks that each replays exactly the changes after its revision, in order, then goes on
// with the next one.
func testWatchFromRevision(t *testing.T, s storage.Interface, root string) {
	prefix := root + "pods/"
	a, b := prefix+"a", prefix+"b"
	start := revision(t, s)
	r1 := create(t, s, a, "a1")
	r2 := update(t, s, a, "a2", r1)
	r3 := create(t, s, b, "b1")
	r4 := create(t, s, root+"other", "x") // outside the prefix
	r5 := del(t, s, a)
	r6 := create(t, s, a, "a3")

	a1, a2 := kv(a, "a1", r1, r1), kv(a, "a2", r1, r2)
	history := []storage.Event{
		{Type: storage.Put, KV: a1, Revision: r1, Created: true},
		{Type: storage.Put, KV: a2, PrevKV: &a1, Revision: r2},
		{Type: storage.Put, KV: kv(b, "b1", r3, r3), Revision: r3, Created: true},
		// A delete carries the last value, at the delete's revision.
		{Type: storage.Delete, KV: kv(a, "a2", r1, r5), PrevKV: &a2, Revision: r5},
		{Type: storage.Put, KV: kv(a, "a3", r6, r6), Revision: r6, Created: true},
	}
	from := []struct {
		rev   int64
		after int // how many of history come before rev
	}{{start, 0}, {r1, 1}, {r2, 2}, {r3, 3}, {r4, 3}, {r5, 4}, {r6, 5}}
	watches := make([]<-chan storage.WatchResult, len(from))
	for i, f := range from {
		watches[i] = s.Watch(t.Context(), prefix, f.rev)
	}
	// One more change ends every replay.
	r7 := update(t, s, b, "b2", r3)
	next := storage.Event{Type: storage.Put, KV: kv(b, "b2", r3, r7), PrevKV: &history[2].KV, Revision: r7}

	for i, f := range from {
		t.Run(fmt.Sprintf("After%d", f.rev-start), func(t *testing.T) {
			want := append(append([]storage.Event(nil), history[f.after:]...), next)
			got := collectUntil(t, watches[i], func(ev storage.Event) bool { return ev.Revision >= r7 })
			if diff := cmp.Diff(want, got, equateEmpty); diff != "" {
				t.Errorf("watch after revision %d (-want +got):\n%s", f.rev, diff)
			}
		})
	}
}

// testWatchFromNow starts a watch without a revision: it sees changes made after it started
// and none from before. A store may take a moment to start a watch (etcd does it after the
// call returns), so a writer changes a key until the watch has seen a change of it.
func testWatchFromNow(t *testing.T, s storage.Interface, root string) {
	prefix, key := root+"pods/", root+"pods/now"
	update(t, s, prefix+"before", "y", create(t, s, prefix+"before", "x"))
	rev := create(t, s, key, "0")
	ch := s.Watch(t.Context(), prefix, 0)

	var mu sync.Mutex
	written := map[int64]string{}
	seen, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 1; ; i++ {
			value := fmt.Sprint(i)
			r, err := s.Update(t.Context(), key, []byte(value), rev)
			if err != nil {
				t.Errorf("update %s: %v", key, err)
				return
			}
			mu.Lock()
			written[r] = value
			mu.Unlock()
			rev = r
			select {
			case <-seen:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	stop := sync.OnceFunc(func() { close(seen); <-stopped })
	defer stop() // also when the test fails below
	var res storage.WatchResult
	var ok bool
	select {
	case res, ok = <-ch:
	case <-stopped:
		t.Fatal("the writer stopped before the watch saw a change")
	case <-time.After(Deadline):
		t.Fatalf("watch from now saw none of the changes made in %v", Deadline)
	}
	stop()
	if !ok || res.Err != nil || len(res.Events) == 0 {
		t.Fatalf("watch from now: first result %+v (open %v), want events", res, ok)
	}
	for _, ev := range res.Events {
		mu.Lock()
		value, ours := written[ev.Revision]
		mu.Unlock()
		if !ours || ev.Type != storage.Put || ev.KV.Key != key || string(ev.KV.Value) != value {
			t.Errorf("watch from now delivered %s %q=%q at %d, which is not one of the changes made after it started",
				typeName(ev.Type), ev.KV.Key, ev.KV.Value, ev.Revision)
		}
	}
}

func typeName(t storage.EventType) string {
	if t == storage.Delete {
		return "DELETE"
	}
	return "PUT"
}

// testWatchFromFutureRevision starts a watch at a revision the store has not reached: it
// delivers the changes after that revision only, once the store gets there.
func testWatchFromFutureRevision(t *testing.T, s storage.Interface, root string) {
	next := revision(t, s) + 1
	ch := s.Watch(t.Context(), root, next)
	create(t, s, root+"a", "1") // at next: not after it
	rev := create(t, s, root+"b", "1")
	want := []storage.Event{{Type: storage.Put, KV: kv(root+"b", "1", rev, rev), Revision: rev, Created: true}}
	if diff := cmp.Diff(want, collect(t, ch, 1), equateEmpty); diff != "" {
		t.Errorf("watch after the future revision %d (-want +got):\n%s", next, diff)
	}
}

// testWatchFromCompactedRevision checks that a watch that would have to start below the
// compacted revision ends with ErrCompacted alone, and one at the compacted revision works.
func testWatchFromCompactedRevision(t *testing.T, s storage.Interface, root string) {
	key := root + "a"
	before := revision(t, s)
	r1 := create(t, s, key, "1")
	r2 := update(t, s, key, "2", r1)
	r3 := update(t, s, key, "3", r2)
	compact(t, s, r3)

	for _, rev := range []int64{before, r1} {
		t.Run(fmt.Sprintf("After%d", rev-before), func(t *testing.T) {
			ch := s.Watch(t.Context(), root, rev)
			res, ok := receive(t, ch)
			if !ok || !errors.Is(res.Err, storage.ErrCompacted) || len(res.Events) > 0 {
				t.Fatalf("watch after %d, below the compaction at %d: %+v (open %v), want ErrCompacted alone", rev, r3, res, ok)
			}
			if res, ok := receive(t, ch); ok {
				t.Errorf("watch delivered %+v after its terminal error, want the channel closed", res)
			}
		})
	}

	// A watch after r2 starts at the compacted revision, which is still there. What it says of
	// the change at r3 is not asserted: etcd may have compacted its previous value away.
	atCompacted, afterCompacted := s.Watch(t.Context(), root, r2), s.Watch(t.Context(), root, r3)
	r4 := update(t, s, key, "4", r3)
	prev := kv(key, "3", r1, r3)
	want := storage.Event{Type: storage.Put, KV: kv(key, "4", r1, r4), PrevKV: &prev, Revision: r4}
	if diff := cmp.Diff([]storage.Event{want}, collect(t, afterCompacted, 1), equateEmpty); diff != "" {
		t.Errorf("watch after the compacted revision %d (-want +got):\n%s", r3, diff)
	}
	got := collectUntil(t, atCompacted, func(ev storage.Event) bool { return ev.Revision >= r4 })
	if diff := cmp.Diff(want, got[len(got)-1], equateEmpty); diff != "" {
		t.Errorf("watch from the compacted revision %d, last event (-want +got):\n%s", r3, diff)
	}
}

// testWatchEndsWithContext checks that a watch's channel closes when its context ends, whether
// it waits for changes or has some its reader never took.
func testWatchEndsWithContext(t *testing.T, s storage.Interface, root string) {
	before := revision(t, s)
	for i := range 5 {
		create(t, s, fmt.Sprintf("%s%d", root, i), "x")
	}
	for _, c := range []struct {
		name string
		rev  int64
	}{{"Waiting", 0}, {"WithUnreadChanges", before}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			ch := s.Watch(ctx, root, c.rev)
			cancel()
			wantClosed(t, ch)
		})
	}
}

// testWatchPrefixIsPlain checks that a watch's prefix is bytes, as a list's is.
func testWatchPrefixIsPlain(t *testing.T, s storage.Interface, root string) {
	before := revision(t, s)
	narrow, wide := s.Watch(t.Context(), root+"ns1/", before), s.Watch(t.Context(), root+"ns1", before)
	var evs []storage.Event
	for _, name := range []string{"ns1/a", "ns10/a", "ns1x", "ns0/a", "ns2/a", "ns1/b"} {
		rev := create(t, s, root+name, "v")
		evs = append(evs, storage.Event{Type: storage.Put, KV: kv(root+name, "v", rev, rev), Revision: rev, Created: true})
	}
	last := func(ev storage.Event) bool { return ev.KV.Key == root+"ns1/b" }
	for _, c := range []struct {
		name string
		ch   <-chan storage.WatchResult
		want []storage.Event
	}{
		{"ns1/", narrow, []storage.Event{evs[0], evs[5]}},
		{"ns1", wide, []storage.Event{evs[0], evs[1], evs[2], evs[5]}},
	} {
		if diff := cmp.Diff(c.want, collectUntil(t, c.ch, last), equateEmpty); diff != "" {
			t.Errorf("watch of %q (-want +got):\n%s", root+c.name, diff)
		}
	}
}
