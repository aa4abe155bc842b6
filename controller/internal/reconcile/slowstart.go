package reconcile

import (
	"context"
	"sync"
)

// SlowStart calls fn count times in batches that double from initial (1, 2, 4, ...), each
// batch at once, and stops after the first batch with a failure: a create that fails (a quota,
// a webhook, a bad template) fails the same way for all, so the apiserver gets a handful of
// doomed requests instead of count. It returns how many calls succeeded and the first error;
// the calls never made are count minus the calls made.
func SlowStart(ctx context.Context, count, initial int, fn func(ctx context.Context) error) (succeeded, attempted int, err error) {
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
			wg.Add(1)
			go func() {
				defer wg.Done()
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
