package pleg

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/workqueue/clock"
)

type lister struct {
	mu   sync.Mutex
	list []runtime.Container
}

func (l *lister) set(cs ...runtime.Container) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = cs
}

func (l *lister) List(context.Context, map[string]string) ([]runtime.Container, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]runtime.Container(nil), l.list...), nil
}

// Inspect answers like a runtime whose List leaves out exit details: it adds them.
func (l *lister) Inspect(_ context.Context, id string) (runtime.Container, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.list {
		if c.ID == id {
			c.ExitCode = 137
			return c, nil
		}
	}
	return runtime.Container{}, runtime.ErrNotFound
}

func c(id, uid string, state runtime.State) runtime.Container {
	return runtime.Container{ID: id, State: state, Labels: map[string]string{spec.LabelPodUID: uid, spec.LabelContainerName: "app"}}
}

func TestRelist(t *testing.T) {
	l := &lister{}
	var got []string
	var pods map[string]bool
	p := New(Config{Lister: l, OnEvent: func(e Event) {
		s := string(e.Type) + " " + e.PodUID + "/" + e.Container.ID
		if e.Container.OOMKilled {
			s += " oom"
		}
		if e.Type == ContainerDied && e.Container.ExitCode != 0 {
			s += " inspected"
		}
		got = append(got, s)
	}, OnRelist: func(u map[string]bool) { pods = u }})

	oom := c("b", "p2", runtime.StateExited)
	oom.OOMKilled = true
	steps := []struct {
		name string
		list []runtime.Container
		want []string
		pods map[string]bool
	}{
		{"first relist reports what runs", []runtime.Container{c("a", "p1", runtime.StateRunning), c("b", "p2", runtime.StateRunning),
			{ID: "foreign", State: runtime.StateRunning}},
			[]string{"ContainerStarted p1/a", "ContainerStarted p2/b"}, map[string]bool{"p1": true, "p2": true}},
		{"no change, no events", []runtime.Container{c("a", "p1", runtime.StateRunning), c("b", "p2", runtime.StateRunning)},
			nil, map[string]bool{"p1": true, "p2": true}},
		{"a death carries the OOM kill", []runtime.Container{c("a", "p1", runtime.StateRunning), oom},
			[]string{"ContainerDied p2/b oom inspected"}, map[string]bool{"p1": true, "p2": true}},
		{"removal of an exited container", []runtime.Container{c("a", "p1", runtime.StateRunning)},
			[]string{"ContainerRemoved p2/b oom"}, map[string]bool{"p1": true}},
		{"a running container that vanishes died and was removed", []runtime.Container{c("n", "p1", runtime.StateCreated)},
			[]string{"ContainerChanged p1/n", "ContainerDied p1/a", "ContainerRemoved p1/a"}, map[string]bool{"p1": true}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got = nil
			l.set(s.list...)
			if err := p.Relist(t.Context()); err != nil {
				t.Fatalf("Relist: %v", err)
			}
			if diff := cmp.Diff(s.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(s.pods, pods); diff != "" {
				t.Errorf("pods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStartRelistsEveryPeriod(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := &lister{}
	events := make(chan Event, 10)
	p := New(Config{Lister: l, Clock: clk, Period: time.Second, OnEvent: func(e Event) { events <- e }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- p.Start(ctx) }()

	waitFor(t, func() bool { return !p.LastRelist().IsZero() && clk.Waiters() > 0 })
	l.set(c("a", "p1", runtime.StateRunning))
	clk.Step(time.Second)
	select {
	case e := <-events:
		if e.Type != ContainerStarted || e.PodUID != "p1" {
			t.Errorf("event = %+v, want ContainerStarted of p1", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event after the period passed")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v, want nil", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}
