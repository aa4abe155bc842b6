package storagetest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/apiserver/internal/storage"
)

func testListPages(t *testing.T, s storage.Interface, root string) {
	prefix := root + "pods/"
	// Keys around the prefix that no read of it may return.
	create(t, s, root+"pod", "x")
	create(t, s, root+"pods", "x")
	var all []storage.KV
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		rev := create(t, s, prefix+name, name)
		all = append(all, kv(prefix+name, name, rev, rev))
	}
	create(t, s, root+"pods0", "x")
	create(t, s, root+"podsz/a", "x")
	at := revision(t, s)

	cases := []struct {
		name     string
		from     string
		limit    int64
		want     []storage.KV
		wantMore bool
	}{
		{"All", "", 0, all, false},
		{"FirstPage", "", 2, all[:2], true},
		{"MiddlePage", prefix + "b\x00", 2, all[2:4], true},
		{"LastPage", prefix + "d\x00", 2, all[4:], false},
		{"FromAKey", prefix + "c", 0, all[2:], false},
		{"FromBetweenKeys", prefix + "b5", 2, all[2:4], true},
		{"LimitIsTheCount", "", 5, all, false},
		{"LimitAboveTheCount", "", 6, all, false},
		{"FromPastTheEnd", prefix + "z", 0, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, rev := range []int64{0, at} {
				got := list(t, s, prefix, c.from, c.limit, rev)
				if diff := cmp.Diff(storage.ListResult{KVs: c.want, Revision: at, More: c.wantMore}, got, equateEmpty); diff != "" {
					t.Errorf("List(from %q, limit %d, at %d) (-want +got):\n%s", c.from, c.limit, rev, diff)
				}
			}
		})
	}
}

// testListAtPastRevision pages through a prefix at a revision that later writes have left
// behind, as a paginated list does: every page sees the keys as they were, and says so.
func testListAtPastRevision(t *testing.T, s storage.Interface, root string) {
	prefix := root + "pods/"
	var then []storage.KV
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		rev := create(t, s, prefix+name, name+"1")
		then = append(then, kv(prefix+name, name+"1", rev, rev))
	}
	at := revision(t, s)
	del(t, s, prefix+"a")
	c := update(t, s, prefix+"c", "c2", then[2].ModRevision)
	f := create(t, s, prefix+"f", "f1")
	bb := create(t, s, prefix+"bb", "bb1")
	now := revision(t, s)

	var got []storage.KV
	from := ""
	for page := 0; ; page++ {
		res := list(t, s, prefix, from, 2, at)
		if res.Revision != at {
			t.Errorf("page %d of a list at %d says it was read at %d", page, at, res.Revision)
		}
		got = append(got, res.KVs...)
		if !res.More || page > len(then) {
			break
		}
		from = res.KVs[len(res.KVs)-1].Key + "\x00"
	}
	if diff := cmp.Diff(then, got, equateEmpty); diff != "" {
		t.Errorf("pages of a list at %d (-want +got):\n%s", at, diff)
	}

	want := storage.ListResult{Revision: now, KVs: []storage.KV{then[1], kv(prefix+"bb", "bb1", bb, bb),
		kv(prefix+"c", "c2", then[2].CreateRevision, c), then[3], then[4], kv(prefix+"f", "f1", f, f)}}
	if diff := cmp.Diff(want, list(t, s, prefix, "", 0, 0), equateEmpty); diff != "" {
		t.Errorf("List at the latest revision (-want +got):\n%s", diff)
	}
}

// testListPrefixIsPlain checks that a prefix is bytes, as in etcd: "ns1" covers "ns10/..."
// and "ns1x", only "ns1/" stops at the namespace.
func testListPrefixIsPlain(t *testing.T, s storage.Interface, root string) {
	keys := map[string]storage.KV{}
	for _, name := range []string{"ns1/a", "ns1/b", "ns10/a", "ns1x", "ns1", "ns2/a", "ns0/a",
		"p\xfe", "p\xfe\xff", "p\xfe\xff\x00", "p\xfe\xff\xff", "p\xff", "q"} {
		rev := create(t, s, root+name, "v")
		keys[name] = kv(root+name, "v", rev, rev)
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"ns1/", []string{"ns1/a", "ns1/b"}},
		{"ns1", []string{"ns1", "ns1/a", "ns1/b", "ns10/a", "ns1x"}},
		{"ns10/", []string{"ns10/a"}},
		{"ns", []string{"ns0/a", "ns1", "ns1/a", "ns1/b", "ns10/a", "ns1x", "ns2/a"}},
		// Keys are bytes, not text: a prefix ending in 0xff ends where its last byte below
		// 0xff goes up by one, here at "p\xff".
		{"p\xfe\xff", []string{"p\xfe\xff", "p\xfe\xff\x00", "p\xfe\xff\xff"}},
		{"nothing", nil},
	}
	for _, c := range cases {
		t.Run(c.prefix, func(t *testing.T) {
			var want []storage.KV
			for _, name := range c.want {
				want = append(want, keys[name])
			}
			if diff := cmp.Diff(want, list(t, s, root+c.prefix, "", 0, 0).KVs, equateEmpty); diff != "" {
				t.Errorf("List(%q) (-want +got):\n%s", root+c.prefix, diff)
			}
		})
	}
}

func testListAtCompactedRevision(t *testing.T, s storage.Interface, root string) {
	a, b := root+"a", root+"b"
	r1 := create(t, s, a, "1")
	r2 := update(t, s, a, "2", r1)
	r3 := create(t, s, b, "1")
	del(t, s, a)
	compact(t, s, r2)

	if _, err := s.List(t.Context(), root, "", 0, r1); !errors.Is(err, storage.ErrCompacted) {
		t.Errorf("List at %d, below the compaction at %d: %v, want ErrCompacted", r1, r2, err)
	}
	// The compacted revision itself stays readable.
	want := storage.ListResult{Revision: r2, KVs: []storage.KV{kv(a, "2", r1, r2)}}
	if diff := cmp.Diff(want, list(t, s, root, "", 0, r2), equateEmpty); diff != "" {
		t.Errorf("List at the compacted revision %d (-want +got):\n%s", r2, diff)
	}
	want = storage.ListResult{Revision: r3, KVs: []storage.KV{kv(a, "2", r1, r2), kv(b, "1", r3, r3)}}
	if diff := cmp.Diff(want, list(t, s, root, "", 0, r3), equateEmpty); diff != "" {
		t.Errorf("List at %d, after the compaction (-want +got):\n%s", r3, diff)
	}
	wantState(t, s, b, present(kv(b, "1", r3, r3)))
}

func testListAtFutureRevision(t *testing.T, s storage.Interface, root string) {
	create(t, s, root+"a", "1")
	next := revision(t, s) + 1
	_, err := s.List(t.Context(), root, "", 0, next)
	if err == nil || errors.Is(err, storage.ErrCompacted) {
		t.Errorf("List at the future revision %d: %v, want an error other than ErrCompacted", next, err)
	}
}

func testCompact(t *testing.T, s storage.Interface, root string) {
	r1 := create(t, s, root+"a", "1")
	r2 := update(t, s, root+"a", "2", r1)
	compact(t, s, r2)
	for _, rev := range []int64{r2, r1} {
		if err := s.Compact(t.Context(), rev); !errors.Is(err, storage.ErrCompacted) {
			t.Errorf("Compact(%d) after Compact(%d): %v, want ErrCompacted", rev, r2, err)
		}
	}
	next := revision(t, s) + 1
	if err := s.Compact(t.Context(), next); err == nil || errors.Is(err, storage.ErrCompacted) {
		t.Errorf("Compact at the future revision %d: %v, want an error other than ErrCompacted", next, err)
	}
	// Compaction discards history, not the present, and does not move the revision.
	wantRevision(t, s, r2, "compactions")
	if r3 := update(t, s, root+"a", "3", r2); r3 != r2+1 {
		t.Errorf("update after a compaction got revision %d, want %d", r3, r2+1)
	}
}
