package fake_test

import (
	"errors"
	"testing"

	"minik8s.io/kubelet/internal/podcache"
	"minik8s.io/kubelet/internal/podcache/fake"
	"minik8s.io/kubelet/internal/podcache/podcachetest"
)

func TestContract(t *testing.T) {
	podcachetest.Run(t, func(*testing.T) podcache.Cache { return fake.New() })
}

func TestStalePutWritesNothing(t *testing.T) {
	c := fake.New()
	if err := c.Put(t.Context(), podcachetest.Pod("ns", "p", "5")); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(t.Context(), podcachetest.Pod("ns", "p", "4")); err != nil {
		t.Fatal(err)
	}
	if got := c.Writes(); got != 1 {
		t.Errorf("Writes = %d after one fresh and one stale Put, want 1", got)
	}
}

func TestSetError(t *testing.T) {
	c := fake.New()
	boom := errors.New("redis down")
	c.SetError(boom)
	if err := c.Put(t.Context(), podcachetest.Pod("ns", "p", "1")); !errors.Is(err, boom) {
		t.Errorf("Put = %v, want %v", err, boom)
	}
	if _, err := c.List(t.Context()); !errors.Is(err, boom) {
		t.Errorf("List = %v, want %v", err, boom)
	}
	c.SetError(nil)
	if _, err := c.List(t.Context()); err != nil {
		t.Errorf("List after SetError(nil) = %v", err)
	}
}
