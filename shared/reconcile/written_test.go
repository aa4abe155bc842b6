package reconcile

import (
	"testing"
	"time"
)

func TestWritten(t *testing.T) {
	var w Written
	now := time.Unix(1000, 0)
	if w.Behind("a", "5", now) {
		t.Error("nothing written: not behind")
	}
	w.Wrote("a", "10", now)
	for _, tt := range []struct {
		cached string
		after  time.Duration
		want   bool
	}{
		{"", 0, true},  // created, not in the cache yet
		{"9", 0, true}, // the cache has the version before the write
		{"9", 31 * time.Second, false},
		{"10", 0, false},
	} {
		w.Wrote("a", "10", now)
		if got := w.Behind("a", tt.cached, now.Add(tt.after)); got != tt.want {
			t.Errorf("cached %q after %s: Behind = %v, want %v", tt.cached, tt.after, got, tt.want)
		}
	}
	w.Wrote("a", "10", now)
	w.Behind("a", "11", now)
	if w.Behind("a", "9", now) {
		t.Error("an entry the cache caught up with is forgotten")
	}
}
