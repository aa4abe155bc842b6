package client

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket: burst requests may go at once, then one every 1/qps.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	burst    float64
	tokens   float64
	last     time.Time
}

func newLimiter(qps float64, burst int) *limiter {
	if burst < 1 {
		burst = 1
	}
	return &limiter{interval: time.Duration(float64(time.Second) / qps), burst: float64(burst), tokens: float64(burst)}
}

// reserve takes a token, possibly borrowed from the future, and says how long to wait for it.
func (l *limiter) reserve(now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		l.tokens += float64(now.Sub(l.last)) / float64(l.interval)
		if l.tokens > l.burst {
			l.tokens = l.burst
		}
	}
	l.last = now
	l.tokens--
	if l.tokens >= 0 {
		return 0
	}
	return time.Duration(-l.tokens * float64(l.interval))
}

func (l *limiter) wait(ctx context.Context) error {
	d := l.reserve(time.Now())
	if d == 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
