package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock is what timed code needs from time.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	After(d time.Duration) <-chan time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that timed code uses, behind an interface so Fake can
// implement it.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

func (Real) Now() time.Time                         { return time.Now() }
func (Real) Since(t time.Time) time.Duration        { return time.Since(t) }
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (Real) NewTimer(d time.Duration) Timer         { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a clock that only moves when a test calls Step or SetTime. Timers fire during that
// call, in deadline order, so a test knows exactly which deadlines have passed.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock reading t.
func NewFake(t time.Time) *Fake { return &Fake{now: t} }

func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *Fake) Since(t time.Time) time.Duration { return f.Now().Sub(t) }

func (f *Fake) After(d time.Duration) <-chan time.Time { return f.NewTimer(d).C() }

func (f *Fake) NewTimer(d time.Duration) Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Buffered so firing never blocks Step on a reader that has gone away, as with time.Timer.
	t := &fakeTimer{f: f, ch: make(chan time.Time, 1)}
	f.armLocked(t, d)
	return t
}

// Step moves the clock forward by d and fires every timer that is due.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// SetTime moves the clock to t (which may not be earlier than now) and fires due timers.
func (f *Fake) SetTime(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(t)
}

// Waiters is the number of armed timers. Tests wait for it to grow to know that the code under
// test has reached its timed wait before they step the clock.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

func (f *Fake) setLocked(t time.Time) {
	if t.Before(f.now) {
		return
	}
	f.now = t
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	keep := f.timers[:0]
	for _, ft := range f.timers {
		if ft.at.After(t) {
			keep = append(keep, ft)
			continue
		}
		ft.armed = false
		select {
		case ft.ch <- t:
		default:
		}
	}
	for i := len(keep); i < len(f.timers); i++ {
		f.timers[i] = nil
	}
	f.timers = keep
}

func (f *Fake) armLocked(t *fakeTimer, d time.Duration) {
	t.at = f.now.Add(d)
	t.armed = true
	if d <= 0 {
		t.armed = false
		select {
		case t.ch <- f.now:
		default:
		}
		return
	}
	f.timers = append(f.timers, t)
}

func (f *Fake) disarmLocked(t *fakeTimer) bool {
	if !t.armed {
		return false
	}
	t.armed = false
	for i, ft := range f.timers {
		if ft == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			break
		}
	}
	return true
}

type fakeTimer struct {
	f     *Fake
	at    time.Time
	armed bool
	ch    chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	return t.f.disarmLocked(t)
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	was := t.f.disarmLocked(t)
	t.f.armLocked(t, d)
	return was
}
