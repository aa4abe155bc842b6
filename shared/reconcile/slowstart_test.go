package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSlowStart(t *testing.T) {
	tests := []struct {
		name          string
		count         int
		failFrom      int // calls numbered from 1; 0 never fails
		wantOK        int
		wantAttempted int
		wantBatches   []int
	}{
		{"zero", 0, 0, 0, 0, nil},
		{"one", 1, 0, 1, 1, []int{1}},
		{"doubling", 10, 0, 10, 10, []int{1, 2, 4, 3}},
		{"exact powers", 7, 0, 7, 7, []int{1, 2, 4}},
		{"first call fails: nothing more is tried", 10, 1, 0, 1, []int{1}},
		{"failure in the third batch ends after it", 20, 5, 4, 7, []int{1, 2, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			var batches []int
			inBatch, batchOf := 0, 0
			ok, attempted, err := SlowStart(t.Context(), tt.count, 1, 3, func(context.Context) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				// Batches are made of consecutive calls: the batch sizes are 1, 2, 4...
				// so the call number tells the batch.
				if inBatch == batchOf {
					batches = append(batches, 0)
					inBatch, batchOf = 0, min(max(1, 2*batchOf), tt.count-sum(batches))
				}
				inBatch++
				batches[len(batches)-1]++
				if tt.failFrom > 0 && calls >= tt.failFrom {
					return errors.New("quota")
				}
				return nil
			})
			if ok != tt.wantOK || attempted != tt.wantAttempted {
				t.Errorf("SlowStart = %d ok, %d attempted; want %d, %d", ok, attempted, tt.wantOK, tt.wantAttempted)
			}
			if (err != nil) != (tt.failFrom > 0) {
				t.Errorf("err = %v", err)
			}
			if diff := cmp.Diff(tt.wantBatches, batches); diff != "" {
				t.Errorf("batches (-want +got):\n%s", diff)
			}
		})
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs[:max(len(xs)-1, 0)] {
		n += x
	}
	return n
}

// TestSlowStartParallel checks that no more than parallel calls are in flight at once, while
// a batch still runs as many calls as it is long.
func TestSlowStartParallel(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	ok, attempted, err := SlowStart(t.Context(), 100, 1, 4, func(context.Context) error {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	})
	if ok != 100 || attempted != 100 || err != nil {
		t.Fatalf("SlowStart = %d ok, %d attempted, %v; want 100, 100, nil", ok, attempted, err)
	}
	if most != 4 {
		t.Errorf("at most %d calls in flight; want 4", most)
	}
}
