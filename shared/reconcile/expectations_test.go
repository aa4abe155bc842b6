package reconcile

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	var e Expectations
	if !e.Satisfied("ns/rs", now) {
		t.Fatal("a key never seen is not satisfied")
	}
	e.ExpectCreations("ns/rs", 2, now)
	e.ExpectDeletions("ns/rs", []string{"ns/a", "ns/b"}, now)
	steps := []struct {
		name      string
		do        func()
		satisfied bool
	}{
		{"nothing observed", func() {}, false},
		{"one creation", func() { e.CreationObserved("ns/rs") }, false},
		{"both creations", func() { e.CreationObserved("ns/rs") }, false},
		{"extra creations do not go below zero", func() { e.CreationObserved("ns/rs"); e.CreationObserved("ns/rs") }, false},
		{"a deletion", func() { e.DeletionObserved("ns/rs", "ns/a") }, false},
		{"the same deletion seen again", func() { e.DeletionObserved("ns/rs", "ns/a") }, false},
		{"the other deletion", func() { e.DeletionObserved("ns/rs", "ns/b") }, true},
	}
	for _, s := range steps {
		s.do()
		if got := e.Satisfied("ns/rs", now); got != s.satisfied {
			t.Errorf("%s: Satisfied = %v, want %v", s.name, got, s.satisfied)
		}
	}
	e.ExpectCreations("ns/rs", 1, now)
	if adds, dels := e.Pending("ns/rs"); adds != 1 || dels != 0 {
		t.Errorf("Pending = %d, %d; want 1, 0 (no negative count carried over)", adds, dels)
	}
	if e.Satisfied("ns/rs", now.Add(5*time.Minute)) {
		t.Error("satisfied before the TTL")
	}
	if !e.Satisfied("ns/rs", now.Add(5*time.Minute+time.Second)) {
		t.Error("not satisfied after the TTL")
	}
	e.Forget("ns/rs")
	if !e.Satisfied("ns/rs", now) {
		t.Error("not satisfied after Forget")
	}
}
