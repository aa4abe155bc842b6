package cluster

import (
	"context"
	"fmt"
	"time"
)

// Until calls cond every poll until it holds or fails, or timeout passes; the error then names
// what was awaited.
func Until(ctx context.Context, timeout, poll time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}
