package backoff

import (
	"testing"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

func TestBackOff(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := New(clk)
	key := Key("uid", "app")
	if got := b.Remaining(key, clk.Now()); got != 0 {
		t.Fatalf("Remaining before any restart = %s, want 0 (the first restart is immediate)", got)
	}
	var delays []time.Duration
	for range 7 {
		b.Next(key, time.Second)
		delays = append(delays, b.Delay(key))
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays = %v, want %v", delays, want)
		}
	}

	finished := clk.Now()
	clk.Step(100 * time.Second)
	if got := b.Remaining(key, finished); got != 200*time.Second {
		t.Errorf("Remaining 100s after exit with delay 300s = %s, want 200s", got)
	}
	clk.Step(200 * time.Second)
	if got := b.Remaining(key, finished); got != 0 {
		t.Errorf("Remaining after the delay = %s, want 0", got)
	}

	b.Next(key, 10*time.Minute)
	if got := b.Delay(key); got != 10*time.Second {
		t.Errorf("Delay after a container ran 10 min = %s, want 10s", got)
	}

	other := Key("uid2", "app")
	b.Next(other, 0)
	b.Forget("uid")
	if got := b.Delay(key); got != 0 {
		t.Errorf("Delay after Forget = %s, want 0", got)
	}
	if got := b.Delay(other); got != 10*time.Second {
		t.Errorf("Forget touched another pod: delay = %s, want 10s", got)
	}
}

func TestSinceNextAndForget(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := NewWith(clk, time.Second, 4*time.Second, 4*time.Second)
	key := Key("ds-uid", "node-a")
	if got := b.SinceNext(key); got != 0 {
		t.Fatalf("SinceNext before any Next = %s, want 0", got)
	}
	b.Next(key, 0)
	clk.Step(300 * time.Millisecond)
	if got := b.SinceNext(key); got != 700*time.Millisecond {
		t.Errorf("SinceNext 300ms after a 1s step = %s, want 700ms", got)
	}
	b.Next(key, 0)
	b.Next(key, 0)
	b.Next(key, 0)
	if got := b.SinceNext(key); got != 4*time.Second {
		t.Errorf("SinceNext after four steps = %s, want the 4s cap", got)
	}
	// Left alone for resetAfter+max, it starts over.
	clk.Step(8 * time.Second)
	b.Next(key, 0)
	if got := b.Delay(key); got != time.Second {
		t.Errorf("Delay after a long pause = %s, want 1s", got)
	}
	other := Key("ds-other", "node-a")
	b.Next(other, 0)
	b.Forget("ds-uid")
	if b.SinceNext(key) != 0 || b.SinceNext(other) == 0 {
		t.Errorf("Forget(ds-uid) dropped %s: %s, kept %s: %s", key, b.SinceNext(key), other, b.SinceNext(other))
	}
}
