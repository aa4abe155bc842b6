package fake

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"minik8s.io/kubelet/internal/network"
)

// ErrExhausted is returned by SetUp when every address of the CIDR is taken.
var ErrExhausted = errors.New("fake network: no free address")

// Op names a Network method in recorded calls and injected errors.
type Op string

const (
	OpSetUp    Op = "SetUp"
	OpTearDown Op = "TearDown"
)

// Call is one recorded call and what it returned.
type Call struct {
	Op  Op
	Pod network.Pod
	IP  string // the address SetUp returned; empty for TearDown and failed calls
	Err error
}

// Network is an in-memory network.Network. The zero value is not usable; call New.
// It is safe for concurrent use.
type Network struct {
	prefix netip.Prefix

	mu       sync.Mutex
	byID     map[string]netip.Addr
	used     map[netip.Addr]string
	last     netip.Addr // last allocated, so a released address is not handed out again at once
	calls    []Call
	failures map[Op][]error // queued one-shot errors, consumed first
	always   map[Op]error   // sticky errors, until cleared
}

var _ network.Network = (*Network)(nil)

// New returns a fake that allocates from cidr (e.g. "10.244.1.0/24"), skipping the network
// address, the gateway (.1) and the broadcast address like the bridge + host-local setup does.
// It panics on an invalid cidr: callers are tests passing a literal.
func New(cidr string) *Network {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		panic(fmt.Sprintf("fake.New: invalid IPv4 CIDR %q: %v", cidr, err))
	}
	p = p.Masked()
	return &Network{
		prefix:   p,
		byID:     map[string]netip.Addr{},
		used:     map[netip.Addr]string{},
		failures: map[Op][]error{},
		always:   map[Op]error{},
	}
}

// SetUp attaches pod and returns its address; a pod already attached gets the same address.
func (n *Network) SetUp(ctx context.Context, pod network.Pod) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ip, err := n.setUp(ctx, pod)
	c := Call{Op: OpSetUp, Pod: clonePod(pod), Err: err}
	if err == nil {
		c.IP = ip
	}
	n.calls = append(n.calls, c)
	return ip, err
}

func (n *Network) setUp(ctx context.Context, pod network.Pod) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("set up pod %s: %w", pod.ID, err)
	}
	if err := n.injected(OpSetUp); err != nil {
		return "", err
	}
	if pod.ID == "" {
		return "", errors.New("set up pod: empty sandbox id")
	}
	if a, ok := n.byID[pod.ID]; ok {
		return a.String(), nil
	}
	a, ok := n.allocate()
	if !ok {
		return "", fmt.Errorf("set up pod %s: %w", pod.ID, ErrExhausted)
	}
	n.byID[pod.ID] = a
	n.used[a] = pod.ID
	n.last = a
	return a.String(), nil
}

// allocate scans round-robin from the address after the last allocated one, as host-local
// does, skipping the network address, the gateway (.1) and the broadcast address.
func (n *Network) allocate() (netip.Addr, bool) {
	first := n.prefix.Addr().Next().Next()
	usable := func(a netip.Addr) bool { return n.prefix.Contains(a) && n.prefix.Contains(a.Next()) }
	if !usable(first) {
		return netip.Addr{}, false
	}
	start := first
	if n.last.IsValid() && usable(n.last.Next()) {
		start = n.last.Next()
	}
	a := start
	for {
		if _, taken := n.used[a]; !taken {
			return a, true
		}
		if a = a.Next(); !usable(a) {
			a = first
		}
		if a == start {
			return netip.Addr{}, false
		}
	}
}

// TearDown releases pod's address; an unknown pod is not an error.
func (n *Network) TearDown(ctx context.Context, pod network.Pod) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	err := n.tearDown(ctx, pod)
	n.calls = append(n.calls, Call{Op: OpTearDown, Pod: clonePod(pod), Err: err})
	return err
}

func (n *Network) tearDown(ctx context.Context, pod network.Pod) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tear down pod %s: %w", pod.ID, err)
	}
	if err := n.injected(OpTearDown); err != nil {
		return err
	}
	if a, ok := n.byID[pod.ID]; ok {
		delete(n.used, a)
		delete(n.byID, pod.ID)
	}
	return nil
}

func (n *Network) injected(op Op) error {
	if q := n.failures[op]; len(q) > 0 {
		n.failures[op] = q[1:]
		return q[0]
	}
	return n.always[op]
}

// FailNext makes the next call of op return err, once. Calls queue up.
func (n *Network) FailNext(op Op, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failures[op] = append(n.failures[op], err)
}

// FailAlways makes every call of op return err until it is called again with nil.
func (n *Network) FailAlways(op Op, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err == nil {
		delete(n.always, op)
		return
	}
	n.always[op] = err
}

// Calls returns a copy of the recorded calls, oldest first.
func (n *Network) Calls() []Call {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Call, len(n.calls))
	for i, c := range n.calls {
		c.Pod = clonePod(c.Pod)
		out[i] = c
	}
	return out
}

// ResetCalls forgets the recorded calls.
func (n *Network) ResetCalls() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = nil
}

// IP returns the address attached to sandbox id, if any.
func (n *Network) IP(id string) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.byID[id]
	if !ok {
		return "", false
	}
	return a.String(), true
}

// Attached returns sandbox id → address for every attached pod.
func (n *Network) Attached() map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]string, len(n.byID))
	for id, a := range n.byID {
		out[id] = a.String()
	}
	return out
}

// CIDR returns the prefix addresses come from.
func (n *Network) CIDR() string { return n.prefix.String() }

func clonePod(p network.Pod) network.Pod {
	p.Ports = slices.Clone(p.Ports)
	return p
}
