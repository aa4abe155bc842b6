package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestLoop checks the loop's contract: every key from Keys is synced, a failing key is
// retried until it succeeds, a Requeue comes back without counting as a failure and forgets
// the failures before it, a key queued by Resynced is synced too, and Run returns once ctx
// ends.
func TestLoop(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	failuresAfterRequeue := -1
	l := New("test", nil)
	l.Keys = func() []string { return []string{"ok", "flaky", "waits", "recovers"} }
	l.Resync = time.Hour
	l.Resynced = func(context.Context) { l.Add("unlisted") }
	l.Sync = func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch {
		case key == "flaky" && calls[key] < 3:
			return errors.New("not yet")
		case key == "waits" && calls[key] < 2:
			return Requeue{After: 10 * time.Millisecond}
		case key == "recovers" && calls[key] < 3:
			return errors.New("not yet")
		case key == "recovers" && calls[key] == 3:
			return Requeue{After: 10 * time.Millisecond}
		case key == "recovers" && calls[key] == 4:
			failuresAfterRequeue = l.Queue.NumRequeues(key)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		ok := calls["ok"] == 1 && calls["flaky"] == 3 && calls["waits"] == 2 && calls["unlisted"] == 1 && calls["recovers"] == 4
		snapshot := map[string]int{"ok": calls["ok"], "flaky": calls["flaky"], "waits": calls["waits"], "unlisted": calls["unlisted"], "recovers": calls["recovers"]}
		mu.Unlock()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls %v, want ok 1, flaky 3, waits 2, unlisted 1, recovers 4", snapshot)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := l.Queue.NumRequeues("waits"); n != 0 {
		t.Errorf("a Requeue counted %d failures", n)
	}
	mu.Lock()
	if failuresAfterRequeue != 0 {
		t.Errorf("after two failures and a Requeue, %d failures were still counted, want 0", failuresAfterRequeue)
	}
	mu.Unlock()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}
