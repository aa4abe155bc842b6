package clock

import (
	"testing"
	"time"
)

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestFakeTimers(t *testing.T) {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		run   func(f *Fake) bool // returns whether the timer under test fired
		want  bool
		armed int // Waiters afterwards
	}{
		{"not due", func(f *Fake) bool {
			tm := f.NewTimer(time.Second)
			f.Step(999 * time.Millisecond)
			return fired(tm.C())
		}, false, 1},
		{"due", func(f *Fake) bool { tm := f.NewTimer(time.Second); f.Step(time.Second); return fired(tm.C()) }, true, 0},
		{"After", func(f *Fake) bool { c := f.After(time.Minute); f.SetTime(start.Add(time.Hour)); return fired(c) }, true, 0},
		{"zero delay fires at once", func(f *Fake) bool { return fired(f.NewTimer(0).C()) }, true, 0},
		{"stopped", func(f *Fake) bool {
			tm := f.NewTimer(time.Second)
			if !tm.Stop() {
				return true
			}
			f.Step(time.Hour)
			return fired(tm.C())
		}, false, 0},
		{"reset postpones", func(f *Fake) bool {
			tm := f.NewTimer(time.Second)
			tm.Reset(time.Minute)
			f.Step(time.Second)
			return fired(tm.C())
		}, false, 1},
		{"time never goes back", func(f *Fake) bool {
			f.SetTime(start.Add(-time.Hour))
			return !f.Now().Equal(start)
		}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFake(start)
			if got := tt.run(f); got != tt.want {
				t.Errorf("fired = %v, want %v", got, tt.want)
			}
			if got := f.Waiters(); got != tt.armed {
				t.Errorf("Waiters = %d, want %d", got, tt.armed)
			}
		})
	}
}
