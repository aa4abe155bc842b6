// Package testwait waits in tests for a condition, polling, with a generous deadline: the
// machines that run the tests are shared and slow, and timing goals belong in benchmarks.
package testwait

import (
	"testing"
	"time"
)

// Deadline bounds every wait.
const Deadline = 30 * time.Second

// For polls cond until it holds, failing t with what it waited for after Deadline.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Deadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", Deadline, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
