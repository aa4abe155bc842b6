package bus

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is exponential backoff with jitter: attempt n (from 0) waits a random
// time in [d/2, d] where d = Initial * 2^n capped at Max. The jitter spreads
// reconnects of many consumers after a broker restart.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// Delay returns the wait before retry number attempt (0 for the first retry).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Initial
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// Sleep waits for d or until ctx is done, returning ctx's error in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
