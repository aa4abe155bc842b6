package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIndexKeepsKeysOrdered checks the skip list against a sorted slice through random inserts,
// removals and seeks.
func TestIndexKeepsKeysOrdered(t *testing.T) {
	ix := newIndex()
	var want []string
	rnd := rand.New(rand.NewPCG(7, 7))
	for i := range 5000 {
		key := fmt.Sprintf("k%04d", rnd.IntN(2000))
		at, found := slices.BinarySearch(want, key)
		if i%3 == 2 {
			ix.remove(key)
			if found {
				want = slices.Delete(want, at, at+1)
			}
		} else if !found {
			ix.insert(&record{key: key})
			want = slices.Insert(want, at, key)
		}

		probe := fmt.Sprintf("k%04d", rnd.IntN(2100))
		at, _ = slices.BinarySearch(want, probe)
		var got string
		if n := ix.seek(probe); n != nil {
			got = n.rec.key
		}
		var wantKey string // "" for none: no key is empty
		if at < len(want) {
			wantKey = want[at]
		}
		if got != wantKey {
			t.Fatalf("step %d: seek(%q) = %q, want %q", i, probe, got, wantKey)
		}
	}
	var got []string
	for n := ix.seek(""); n != nil; n = n.next[0] {
		got = append(got, n.rec.key)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys in order (-want +got):\n%s", diff)
	}
}
