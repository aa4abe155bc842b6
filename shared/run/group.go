package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Runnable is a long-lived part: Start blocks until ctx is done (or it fails) and returns after
// cleaning up.
type Runnable interface {
	Start(ctx context.Context) error
}

// Func adapts a function to a Runnable.
type Func func(ctx context.Context) error

func (f Func) Start(ctx context.Context) error { return f(ctx) }

// DefaultShutdownTimeout bounds the whole shutdown when Group.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 30 * time.Second

// ErrShutdownTimeout is returned when runnables were still running at the shutdown deadline.
var ErrShutdownTimeout = errors.New("shutdown timed out")

// Group runs runnables together. The zero value is ready to use.
type Group struct {
	// ShutdownTimeout bounds the time from the start of shutdown until every runnable has
	// returned.
	ShutdownTimeout time.Duration
	Logger          *slog.Logger

	entries []entry
}

type entry struct {
	name string
	r    Runnable
}

// Add registers r under name (used in logs and errors). Add before Run; runnables are started
// in the order added and stopped in the reverse order.
func (g *Group) Add(name string, r Runnable) {
	g.entries = append(g.entries, entry{name: name, r: r})
}

type result struct {
	idx int
	err error
}

// Run starts every runnable and blocks until ctx is done or one of them fails, then stops the
// rest one at a time, last added first, each getting its own cancellation. It returns the
// first real error (context cancellation is not one), joined with ErrShutdownTimeout if some
// runnable did not return in time. A runnable that returns nil early just ends; the others go
// on.
func (g *Group) Run(ctx context.Context) error {
	log := g.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := g.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	n := len(g.entries)
	if n == 0 {
		return nil
	}

	// Each runnable gets a context that keeps ctx's values but not its cancellation, so the
	// group, not the caller, decides the order in which they stop.
	base := context.WithoutCancel(ctx)
	cancels := make([]context.CancelFunc, n)
	done := make([]bool, n)
	results := make(chan result, n)
	for i, e := range g.entries {
		rctx, cancel := context.WithCancel(base)
		cancels[i] = cancel
		go func() { results <- result{idx: i, err: start(rctx, e)} }()
	}
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()

	var firstErr error
	running := n
	record := func(res result) {
		done[res.idx] = true
		running--
		name := g.entries[res.idx].name
		switch {
		case res.err == nil || errors.Is(res.err, context.Canceled):
			log.Debug("runnable stopped", "runnable", name)
		case firstErr == nil:
			firstErr = fmt.Errorf("%s: %w", name, res.err)
		default:
			// Only the first error is returned; later ones are often consequences of it.
			log.Error("runnable failed during shutdown", "runnable", name, "err", res.err)
		}
	}

wait:
	for running > 0 {
		select {
		case <-ctx.Done():
			break wait
		case res := <-results:
			record(res)
			if firstErr != nil {
				break wait
			}
			log.Info("runnable returned", "runnable", g.entries[res.idx].name)
		}
	}
	if running == 0 {
		return firstErr
	}
	if firstErr != nil {
		log.Info("shutting down after a failure", "err", firstErr)
	}

	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for i := n - 1; i >= 0; i-- {
		cancels[i]()
		for !done[i] {
			select {
			case res := <-results:
				record(res)
			case <-deadline.C:
				return errors.Join(firstErr, g.abandon(cancels, done, results, record, min(time.Second, timeout)))
			}
		}
	}
	return firstErr
}

// abandon ends an ordered shutdown that ran out of time: it cancels everything still running
// at once, gives them grace to return, and names those that did not.
func (g *Group) abandon(cancels []context.CancelFunc, done []bool, results <-chan result, record func(result), grace time.Duration) error {
	for i := range cancels {
		if !done[i] {
			cancels[i]()
		}
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	for slices.Contains(done, false) {
		select {
		case res := <-results:
			record(res)
			continue
		case <-t.C:
		}
		break
	}
	var stuck []string
	for i, d := range done {
		if !d {
			stuck = append(stuck, g.entries[i].name)
		}
	}
	if len(stuck) == 0 {
		return fmt.Errorf("%w: runnables stopped only when cancelled together", ErrShutdownTimeout)
	}
	return fmt.Errorf("%w: still running: %s", ErrShutdownTimeout, strings.Join(stuck, ", "))
}

// start runs one runnable, turning a panic into an error so one bad part shuts the group down
// cleanly instead of killing the process mid-write.
func start(ctx context.Context, e entry) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return e.r.Start(ctx)
}
