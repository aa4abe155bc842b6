package memstore

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/apiserver/internal/storage"
)

const deadline = 60 * time.Second

func mustCreate(t *testing.T, s *Store, key string) int64 {
	t.Helper()
	rev, err := s.Create(t.Context(), key, []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestWatcherBehindACompactionEnds checks the policy for slow watchers: writes never wait for
// them, and one that has not read up to a revision when it is compacted ends with ErrCompacted
// after the events it had already taken, which are in order.
func TestWatcherBehindACompactionEnds(t *testing.T) {
	s := New()
	s.batch = 1 // so the watcher can have taken at most the first change
	start, _ := s.Revision(t.Context())
	ch := s.Watch(t.Context(), "/", start)
	var last int64
	for i := range 3 {
		last = mustCreate(t, s, fmt.Sprintf("/k%d", i))
	}
	if err := s.Compact(t.Context(), last); err != nil {
		t.Fatal(err)
	}
	var revs []int64
	var err error
	for res := range ch {
		for _, ev := range res.Events {
			revs = append(revs, ev.Revision)
		}
		if res.Err != nil {
			err = res.Err
		}
	}
	if !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("watcher behind the compaction ended with %v, want ErrCompacted", err)
	}
	if len(revs) > 1 || len(revs) == 1 && revs[0] != start+1 {
		t.Errorf("watcher behind the compaction delivered revisions %v, want at most the first, %d", revs, start+1)
	}
}

// TestUnreadWatchersDoNotHoldUpWrites writes many changes past watchers that never read; the
// writes finishing is the assertion, and the watchers still see every change afterwards.
func TestUnreadWatchersDoNotHoldUpWrites(t *testing.T) {
	const n = 5000
	s := New()
	start, _ := s.Revision(t.Context())
	chs := []<-chan storage.WatchResult{s.Watch(t.Context(), "/", 0), s.Watch(t.Context(), "/", start), s.Watch(t.Context(), "/a", 0)}
	for i := range n {
		mustCreate(t, s, fmt.Sprintf("/k%05d", i))
	}
	for i, ch := range chs[:2] {
		got := 0
		timeout := time.After(deadline)
		for got < n {
			select {
			case res := <-ch:
				if res.Err != nil {
					t.Fatalf("watcher %d: %v", i, res.Err)
				}
				for _, ev := range res.Events {
					if want := start + 1 + int64(got); ev.Revision != want {
						t.Fatalf("watcher %d: event %d at revision %d, want %d", i, got, ev.Revision, want)
					}
					got++
				}
			case <-timeout:
				t.Fatalf("watcher %d: %d of %d events within %v", i, got, n, deadline)
			}
		}
	}
}

// TestCompactionFreesHistory checks that Compact keeps only what a read at the compacted
// revision or later can see: deleted keys go entirely, others keep one version.
func TestCompactionFreesHistory(t *testing.T) {
	const n = 100
	s := New()
	ctx := t.Context()
	for i := range n {
		key := fmt.Sprintf("/k%03d", i)
		rev := mustCreate(t, s, key)
		if _, err := s.Update(ctx, key, []byte("2"), rev); err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if _, _, err := s.Delete(ctx, key, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	rev, _ := s.Revision(ctx)
	if err := s.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}

	var want, indexed, recorded []string
	for i := 0; i < n; i += 2 {
		want = append(want, fmt.Sprintf("/k%03d 1", i))
	}
	for nd := s.keys.seek(""); nd != nil; nd = nd.next[0] {
		indexed = append(indexed, fmt.Sprintf("%s %d", nd.rec.key, len(nd.rec.versions)))
	}
	for i := range n {
		if r := s.records[fmt.Sprintf("/k%03d", i)]; r != nil {
			recorded = append(recorded, fmt.Sprintf("%s %d", r.key, len(r.versions)))
		}
	}
	if diff := cmp.Diff(want, indexed); diff != "" {
		t.Errorf("index after compaction, key and versions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, recorded); diff != "" {
		t.Errorf("records after compaction, key and versions (-want +got):\n%s", diff)
	}
	if len(s.log) != 1 || s.log[0].Revision != rev {
		t.Errorf("log after compaction at %d holds %d events, want only the one at %d", rev, len(s.log), rev)
	}
}
