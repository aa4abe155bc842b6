package run

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stopLog records the order in which runnables see their cancellation.
type stopLog struct {
	mu    sync.Mutex
	order []string
}

func (s *stopLog) waiter(name string, errOnStop error) Func {
	return func(ctx context.Context) error {
		<-ctx.Done()
		s.mu.Lock()
		s.order = append(s.order, name)
		s.mu.Unlock()
		if errOnStop != nil {
			return errOnStop
		}
		return ctx.Err()
	}
}

func (s *stopLog) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// runAsync runs g and returns a channel with Run's result.
func runAsync(ctx context.Context, g *Group) <-chan error {
	out := make(chan error, 1)
	go func() { out <- g.Run(ctx) }()
	return out
}

func await(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

var boom = errors.New("boom")

func TestRun(t *testing.T) {
	tests := []struct {
		name string
		// build adds runnables; trigger (if set) is closed by the test to make one fail.
		build     func(g *Group, s *stopLog, trigger chan struct{})
		cancelCtx bool
		wantErr   error  // matched with errors.Is; nil means Run returns nil
		wantMsg   string // substring of the error
		wantOrder []string
	}{
		{
			name: "cancel stops all in reverse order",
			build: func(g *Group, s *stopLog, _ chan struct{}) {
				g.Add("clients", s.waiter("clients", nil))
				g.Add("queues", s.waiter("queues", nil))
				g.Add("http", s.waiter("http", nil))
			},
			cancelCtx: true,
			wantOrder: []string{"http", "queues", "clients"},
		},
		{
			name: "first error stops the rest and is returned",
			build: func(g *Group, s *stopLog, trigger chan struct{}) {
				g.Add("a", s.waiter("a", nil))
				g.Add("b", Func(func(context.Context) error { <-trigger; return boom }))
				g.Add("c", s.waiter("c", nil))
			},
			wantErr:   boom,
			wantMsg:   "b: boom",
			wantOrder: []string{"c", "a"},
		},
		{
			name: "error during shutdown is returned",
			build: func(g *Group, s *stopLog, _ chan struct{}) {
				g.Add("a", s.waiter("a", boom))
				g.Add("b", s.waiter("b", nil))
			},
			cancelCtx: true,
			wantErr:   boom,
			wantMsg:   "a: boom",
			wantOrder: []string{"b", "a"},
		},
		{
			name: "wrapped cancellation is not an error",
			build: func(g *Group, s *stopLog, _ chan struct{}) {
				g.Add("a", Func(func(ctx context.Context) error {
					<-ctx.Done()
					return errors.Join(errors.New("stopping"), ctx.Err())
				}))
			},
			cancelCtx: true,
		},
		{
			name: "panic becomes an error",
			build: func(g *Group, s *stopLog, trigger chan struct{}) {
				g.Add("a", s.waiter("a", nil))
				g.Add("b", Func(func(context.Context) error { <-trigger; panic("bad state") }))
			},
			wantMsg:   "b: panic: bad state",
			wantOrder: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := Group{Logger: slog.New(slog.DiscardHandler)}
			s := &stopLog{}
			trigger := make(chan struct{})
			tt.build(&g, s, trigger)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			result := runAsync(ctx, &g)
			if tt.cancelCtx {
				cancel()
			} else {
				close(trigger)
			}
			err := await(t, result)
			switch {
			case tt.wantErr == nil && tt.wantMsg == "" && err != nil:
				t.Errorf("Run = %v, want nil", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Run = %v, want %v", err, tt.wantErr)
			case tt.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tt.wantMsg)):
				t.Errorf("Run = %v, want it to mention %q", err, tt.wantMsg)
			}
			if diff := cmp.Diff(tt.wantOrder, s.get()); diff != "" {
				t.Errorf("stop order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEarlyNilReturnDoesNotStopOthers(t *testing.T) {
	logs := &syncBuffer{}
	g := Group{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	ctxSeen := make(chan error, 1)
	proceed := make(chan struct{})
	g.Add("oneshot", Func(func(context.Context) error { return nil }))
	g.Add("server", Func(func(ctx context.Context) error {
		<-proceed
		ctxSeen <- ctx.Err()
		<-ctx.Done()
		return nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	result := runAsync(ctx, &g)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), `msg="runnable returned" runnable=oneshot`) {
		if time.Now().After(deadline) {
			t.Fatalf("group never noticed oneshot returning; logs:\n%s", logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	close(proceed)
	if err := <-ctxSeen; err != nil {
		t.Errorf("server's context ended (%v) after another runnable returned nil", err)
	}
	cancel()
	if err := await(t, result); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestShutdownTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	g := Group{ShutdownTimeout: 50 * time.Millisecond}
	politeStopped := make(chan struct{})
	g.Add("polite", Func(func(ctx context.Context) error { <-ctx.Done(); close(politeStopped); return nil }))
	g.Add("stubborn", Func(func(context.Context) error { <-release; return nil }))
	ctx, cancel := context.WithCancel(context.Background())
	result := runAsync(ctx, &g)
	cancel()
	err := await(t, result)
	if !errors.Is(err, ErrShutdownTimeout) || !strings.Contains(err.Error(), "stubborn") {
		t.Errorf("Run = %v, want ErrShutdownTimeout naming stubborn", err)
	}
	select {
	case <-politeStopped:
	case <-time.After(10 * time.Second):
		t.Error("a runnable queued behind a stuck one was never cancelled")
	}
}

func TestEmptyGroup(t *testing.T) {
	var g Group
	if err := g.Run(context.Background()); err != nil {
		t.Errorf("Run of an empty group = %v", err)
	}
}

func TestAllReturnNil(t *testing.T) {
	var g Group
	g.Add("a", Func(func(context.Context) error { return nil }))
	g.Add("b", Func(func(context.Context) error { return context.Canceled }))
	if err := await(t, runAsync(context.Background(), &g)); err != nil {
		t.Errorf("Run = %v, want nil once every runnable returned without error", err)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
