package pleg

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/workqueue/clock"
)

// EventType names a container lifecycle change.
type EventType string

// The events a relist can produce, as Kubernetes' PLEG names them.
const (
	ContainerStarted EventType = "ContainerStarted"
	ContainerDied    EventType = "ContainerDied"
	ContainerRemoved EventType = "ContainerRemoved"
	ContainerChanged EventType = "ContainerChanged"
)

// Event is one container's change. Container is its latest record (for ContainerRemoved the
// last one seen), so a died container's exit code and OOM kill travel with the event.
type Event struct {
	PodUID    string
	Type      EventType
	Container runtime.Container
}

// Lister is the part of the runtime the PLEG reads.
type Lister interface {
	List(ctx context.Context, match map[string]string) ([]runtime.Container, error)
	// Inspect fills in what a cheap List may leave out (exit code, OOM kill, times).
	Inspect(ctx context.Context, id string) (runtime.Container, error)
}

// DefaultPeriod is how often the runtime is relisted.
const DefaultPeriod = time.Second

// Config configures a PLEG.
type Config struct {
	Lister Lister
	// Match selects the containers to watch by label (this node's); nil watches all.
	Match map[string]string
	Clock clock.Clock
	// Period between relists; DefaultPeriod when zero.
	Period time.Duration
	// OnEvent receives every event of a relist, in container order; it must not block long.
	OnEvent func(Event)
	// OnRelist receives the uids of every pod that has containers, after each relist.
	OnRelist func(pods map[string]bool)
	Logger   *slog.Logger
}

// PLEG relists and diffs. Build with New, run Start.
type PLEG struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	last     map[string]runtime.Container // by container id, from the previous relist
	lastPods map[string]bool              // uids of the pods with containers in it
	relisted time.Time
}

// New returns a PLEG; it does nothing until Start or Relist.
func New(cfg Config) *PLEG {
	if cfg.Period <= 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnEvent == nil {
		cfg.OnEvent = func(Event) {}
	}
	if cfg.OnRelist == nil {
		cfg.OnRelist = func(map[string]bool) {}
	}
	return &PLEG{cfg: cfg, log: cfg.Logger.With("component", "pleg")}
}

// Start relists every period until ctx ends. A failed relist is logged and retried on the
// next tick: the runtime being briefly unavailable must not stop the kubelet.
func (p *PLEG) Start(ctx context.Context) error {
	timer := p.cfg.Clock.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
		}
		if err := p.Relist(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("relist failed", "err", err)
		}
		timer.Reset(p.cfg.Period)
	}
}

// Relist lists the runtime once and reports the differences from the previous relist.
func (p *PLEG) Relist(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := p.cfg.Lister.List(ctx, p.cfg.Match)
	if err != nil {
		return fmt.Errorf("relist: %w", err)
	}
	cur := make(map[string]runtime.Container, len(list))
	pods := map[string]bool{}
	var order []string
	for _, c := range list {
		info, ok := spec.Parse(c.Labels)
		if !ok {
			continue
		}
		cur[c.ID] = c
		pods[info.PodUID] = true
		order = append(order, c.ID)
	}

	p.mu.Lock()
	prev := p.last
	p.last = cur
	p.lastPods = pods
	p.relisted = p.cfg.Clock.Now()
	p.mu.Unlock()

	var events []Event
	for _, id := range order {
		c := cur[id]
		old, seen := prev[id]
		events = append(events, diff(old, seen, c, true)...)
	}
	for id, old := range prev {
		if _, ok := cur[id]; !ok {
			events = append(events, diff(old, true, runtime.Container{}, false)...)
		}
	}
	for _, e := range events {
		if e.Type == ContainerDied {
			if _, exists := cur[e.Container.ID]; exists {
				// Listing does not say how a container ended; the event should.
				if d, err := p.cfg.Lister.Inspect(ctx, e.Container.ID); err == nil {
					if d.Labels == nil {
						d.Labels = e.Container.Labels
					}
					e.Container = d
				}
			}
		}
		p.cfg.OnEvent(e)
	}
	p.cfg.OnRelist(pods)
	return nil
}

// Containers returns the containers of the last relist (the matching ones the kubelet made)
// and when it was made; the zero time before the first.
func (p *PLEG) Containers() ([]runtime.Container, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]runtime.Container, 0, len(p.last))
	for _, c := range p.last {
		out = append(out, c)
	}
	return out, p.relisted
}

// HasContainers reports whether the last relist saw containers of pod uid; relisted is false
// before the first relist, when it knows nothing.
func (p *PLEG) HasContainers(uid string) (has, relisted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastPods[uid], p.last != nil
}

// LastRelist is when the last successful relist happened; health checks compare it to now.
func (p *PLEG) LastRelist() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.relisted
}

// diff turns one container's old and new record into events, as Kubernetes' generic PLEG.
func diff(old runtime.Container, oldExists bool, cur runtime.Container, curExists bool) []Event {
	oldState, curState := state(old, oldExists), state(cur, curExists)
	if oldState == curState {
		return nil
	}
	uid := old.Labels[spec.LabelPodUID]
	if curExists {
		uid = cur.Labels[spec.LabelPodUID]
	}
	ev := func(t EventType, c runtime.Container) Event { return Event{PodUID: uid, Type: t, Container: c} }
	switch curState {
	case runtime.StateRunning:
		return []Event{ev(ContainerStarted, cur)}
	case runtime.StateExited:
		return []Event{ev(ContainerDied, cur)}
	case stateGone:
		if oldState == runtime.StateExited {
			return []Event{ev(ContainerRemoved, old)}
		}
		return []Event{ev(ContainerDied, old), ev(ContainerRemoved, old)}
	}
	return []Event{ev(ContainerChanged, cur)}
}

const stateGone runtime.State = ""

func state(c runtime.Container, exists bool) runtime.State {
	if !exists {
		return stateGone
	}
	return c.State
}
