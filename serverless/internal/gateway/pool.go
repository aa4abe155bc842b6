package gateway

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// errQueueFull: every ready pod is at its limit and the queue is full.
var errQueueFull = errors.New("queue full")

// pool is the pods of one function and the calls waiting for one of them.
type pool struct {
	key string

	mu       sync.Mutex
	backends map[string]*backend // by pod name
	order    []*backend          // backends sorted by pod name, for round-robin among ties
	rr       int
	waiters  []*waiter
	// reactivating: a goroutine asks the autoscaler for a pod every second while calls wait
	// with none ready.
	reactivating bool
	// changed is closed and replaced whenever a pod becomes ready, for those who wait to see
	// one (tests, benchmarks).
	changed chan struct{}
}

// backend is one pod of the function.
type backend struct {
	pod     string
	ip      string
	url     string // the runtime's invoke URL
	version int64

	inflight int
	// apiReady is the pod's Ready condition; probed that the gateway's own probe of /readyz
	// answered (a starting pod is used before the kubelet's probe reaches the API); down that
	// a call could not reach it (not used until a probe answers again).
	apiReady, probed, down bool
	// everAPIReady: the kubelet reported it ready once; if it then reports it unready, the
	// gateway believes it and stops probing on its own.
	everAPIReady bool
	stopProbe    context.CancelFunc
}

func (b *backend) ready() bool { return (b.apiReady || b.probed) && !b.down }

// waiter is a call waiting for a pod; it gets one through ch.
type waiter struct {
	ch      chan *backend
	limit   int
	exclude []string
}

func newPool(key string) *pool {
	return &pool{key: key, backends: map[string]*backend{}, changed: make(chan struct{})}
}

// pick chooses, among ready pods below limit (0: no limit) and not excluded, the one with
// the fewest calls in flight; ties go to the newest version, then round-robin. Call with mu
// held.
func (p *pool) pick(limit int, exclude []string) *backend {
	var best *backend
	n := len(p.order)
	for i := range n {
		b := p.order[(p.rr+i)%n]
		if !b.ready() || (limit > 0 && b.inflight >= limit) || slices.Contains(exclude, b.pod) {
			continue
		}
		if best == nil || b.inflight < best.inflight || (b.inflight == best.inflight && b.version > best.version) {
			best = b
		}
	}
	if best != nil {
		p.rr++
	}
	return best
}

func (p *pool) anyReady() bool {
	for _, b := range p.order {
		if b.ready() {
			return true
		}
	}
	return false
}

func (p *pool) readyCount() int {
	n := 0
	for _, b := range p.order {
		if b.ready() {
			n++
		}
	}
	return n
}

// queueBound is how many calls may wait for a pod with ready pods serving: maxQueue, plus, with
// a per-pod limit, the calls the pods still to come up to maxReplicas will take. A call is thus
// refused only once the function's largest scale is saturated and its queue full; below it the
// call waits for the pods the autoscaler is adding.
func queueBound(limit, maxQueue, maxReplicas, ready int) int {
	if limit > 0 && maxReplicas > ready {
		return maxQueue + (maxReplicas-ready)*limit
	}
	return maxQueue
}

// acquire takes a slot on a pod: at once when one is free, else after waiting in the queue
// (at most queueBound calls wait while some pod is ready; calls waiting for a first pod are
// never refused). onCold is called when the call waits with no pod ready. The caller must
// release the backend.
func (p *pool) acquire(ctx context.Context, limit, maxQueue, maxReplicas int, exclude []string, onCold func()) (*backend, error) {
	p.mu.Lock()
	if b := p.pick(limit, exclude); b != nil {
		b.inflight++
		p.mu.Unlock()
		return b, nil
	}
	cold := !p.anyReady()
	if !cold && len(p.waiters) >= queueBound(limit, maxQueue, maxReplicas, p.readyCount()) {
		p.mu.Unlock()
		return nil, errQueueFull
	}
	w := &waiter{ch: make(chan *backend, 1), limit: limit, exclude: exclude}
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	if cold && onCold != nil {
		onCold()
	}
	select {
	case b := <-w.ch:
		return b, nil
	case <-ctx.Done():
		p.mu.Lock()
		if i := slices.Index(p.waiters, w); i >= 0 {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			p.mu.Unlock()
			return nil, ctx.Err()
		}
		p.mu.Unlock()
		// Handed a pod just as it gave up: give it back.
		p.release(<-w.ch)
		return nil, ctx.Err()
	}
}

// release gives a slot back and hands it to the first waiter that can use a pod.
func (p *pool) release(b *backend) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b.inflight--
	p.dispatch()
}

// dispatch hands free slots to waiters in arrival order. Call with mu held.
func (p *pool) dispatch() {
	for i := 0; i < len(p.waiters); {
		w := p.waiters[i]
		b := p.pick(w.limit, w.exclude)
		if b == nil {
			i++
			continue
		}
		b.inflight++
		w.ch <- b
		p.waiters = slices.Delete(p.waiters, i, i+1)
	}
}

// waiting is how many calls wait for a pod.
func (p *pool) waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// readyPods lists the pods calls may go to.
func (p *pool) readyPods() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, b := range p.order {
		if b.ready() {
			out = append(out, b.pod)
		}
	}
	return out
}

// put adds or replaces a backend. Call with mu held.
func (p *pool) put(b *backend) {
	if old := p.backends[b.pod]; old != nil && old != b {
		p.dropLocked(old)
	}
	p.backends[b.pod] = b
	p.order = append(p.order, b)
	slices.SortFunc(p.order, func(x, y *backend) int { return strings.Compare(x.pod, y.pod) })
}

// dropLocked removes a backend; calls in flight on it finish. Call with mu held.
func (p *pool) dropLocked(b *backend) {
	if b.stopProbe != nil {
		b.stopProbe()
	}
	delete(p.backends, b.pod)
	if i := slices.Index(p.order, b); i >= 0 {
		p.order = slices.Delete(p.order, i, i+1)
	}
}

// becameReady wakes waiters and watchers after a pod became ready. Call with mu held.
func (p *pool) becameReady() {
	p.dispatch()
	close(p.changed)
	p.changed = make(chan struct{})
}
