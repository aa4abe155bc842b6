package reconcile

import (
	"context"
	"sync"
)

// SlowStartParallel is how many calls of a slow-start batch the controllers have in flight at
// once: as many as the benchmarks' direct creation uses (16 clients), which keeps up with
// what the apiserver takes on two cores.
const SlowStartParallel = 16

// SlowStart calls fn count times in batches that double from initial (1, 2, 4, ...), at most
// parallel calls of a batch at once (no bound when it is not positive), and stops after the
// first batch with a failure: a create that fails (a quota, a webhook, a bad template) fails
// the same way for all, so the apiserver gets a handful of doomed requests instead of count.
// It returns how many calls succeeded and the first error; the calls never made are count
// minus the calls made.
//
// The bound matters because the apiserver speaks HTTP/1.1: every call in flight holds a
// connection of its own, and a batch of hundreds at once opens (and a TLS handshake
// costs both sides) as many connections, most of them closed again after the batch, for no
// more throughput than a few dozen give on a small machine.
func SlowStart(ctx context.Context, count, initial, parallel int, fn func(ctx context.Context) error) (succeeded, attempted int, err error) {
	if parallel <= 0 {
		parallel = count
	}
	slots := make(chan struct{}, max(parallel, 1))
	remaining := count
	for batch := min(remaining, max(initial, 1)); batch > 0; batch = min(2*batch, remaining) {
		if err := ctx.Err(); err != nil {
			return succeeded, attempted, err
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first error
			ok    int
		)
		for range batch {
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				e := fn(ctx)
				mu.Lock()
				defer mu.Unlock()
				if e != nil {
					if first == nil {
						first = e
					}
					return
				}
				ok++
			}()
		}
		wg.Wait()
		succeeded += ok
		attempted += batch
		if first != nil {
			return succeeded, attempted, first
		}
		remaining -= batch
	}
	return succeeded, attempted, nil
}
