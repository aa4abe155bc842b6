package nodestatus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/shared/apierror"
)

// fakeAPI stands in for the apiserver's nodes, nodes/status and leases endpoints with the
// semantics the agent relies on: AlreadyExists, Conflict on a stale resourceVersion, status
// writes that change only status, podCIDR assignment on create. Objects go through JSON, as
// on the wire, so lost precision (times in seconds) shows up here too.
type fakeAPI struct {
	mu     sync.Mutex
	rv     int
	nodes  map[string]*corev1.Node
	leases map[string]*coordinationv1.Lease
	calls  []string
	// noCIDR makes node creation leave spec.podCIDR empty, as if allocation lagged.
	noCIDR bool
	// failNext holds errors the next calls of a kind ("create node", ...) return.
	failNext map[string][]error
	nextCIDR int
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{nodes: map[string]*corev1.Node{}, leases: map[string]*coordinationv1.Lease{}, failNext: map[string][]error{}}
}

func (f *fakeAPI) api() nodestatus.API {
	return nodestatus.API{Nodes: fakeNodes{f}, Leases: fakeLeases{f}}
}

// call records a call and returns an injected error for it, if any. Callers hold f.mu.
func (f *fakeAPI) call(kind string) error {
	f.calls = append(f.calls, kind)
	if errs := f.failNext[kind]; len(errs) > 0 {
		f.failNext[kind] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *fakeAPI) fail(kind string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failNext[kind] = append(f.failNext[kind], err)
}

// count is how many calls of kind were made.
func (f *fakeAPI) count(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == kind {
			n++
		}
	}
	return n
}

func (f *fakeAPI) writes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if c[:3] != "get" {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeAPI) node(name string) *corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[name]; ok {
		return roundTrip(n)
	}
	return nil
}

func (f *fakeAPI) lease(name string) *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.leases[name]; ok {
		return roundTrip(l)
	}
	return nil
}

// putNode stores a node as if someone else had written it.
func (f *fakeAPI) putNode(n *corev1.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = roundTrip(n)
	f.rv++
	n.ResourceVersion = strconv.Itoa(f.rv)
	if n.UID == "" {
		n.UID = types.UID(fmt.Sprintf("uid-%d", f.rv))
	}
	f.nodes[n.Name] = n
}

func (f *fakeAPI) deleteNode(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.nodes, name)
}

func roundTrip[T any](v *T) *T {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

type fakeNodes struct{ f *fakeAPI }

func (n fakeNodes) Get(_ context.Context, _, name string, _ metav1.GetOptions) (*corev1.Node, error) {
	f := n.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("get node"); err != nil {
		return nil, err
	}
	cur, ok := f.nodes[name]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "nodes %q not found", name)
	}
	return roundTrip(cur), nil
}

func (n fakeNodes) Create(_ context.Context, node *corev1.Node, _ metav1.CreateOptions) (*corev1.Node, error) {
	f := n.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create node"); err != nil {
		return nil, err
	}
	if _, ok := f.nodes[node.Name]; ok {
		return nil, apierror.New(apierror.ErrAlreadyExists, "nodes %q already exists", node.Name)
	}
	node = roundTrip(node)
	f.rv++
	node.ResourceVersion = strconv.Itoa(f.rv)
	node.UID = types.UID(fmt.Sprintf("uid-%d", f.rv))
	node.CreationTimestamp = metav1.NewTime(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	if node.Spec.PodCIDR == "" && !f.noCIDR {
		node.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", f.nextCIDR)
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
		f.nextCIDR++
	}
	f.nodes[node.Name] = node
	return roundTrip(node), nil
}

func (n fakeNodes) Update(_ context.Context, node *corev1.Node, _ metav1.UpdateOptions) (*corev1.Node, error) {
	return n.f.updateNode("update node", node, func(stored, in *corev1.Node) *corev1.Node {
		in.Status = stored.Status
		return in
	})
}

func (n fakeNodes) UpdateStatus(_ context.Context, node *corev1.Node, _ metav1.UpdateOptions) (*corev1.Node, error) {
	return n.f.updateNode("update node/status", node, func(stored, in *corev1.Node) *corev1.Node {
		stored.Status = in.Status
		return stored
	})
}

func (f *fakeAPI) updateNode(kind string, in *corev1.Node, merge func(stored, in *corev1.Node) *corev1.Node) (*corev1.Node, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call(kind); err != nil {
		return nil, err
	}
	stored, ok := f.nodes[in.Name]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "nodes %q not found", in.Name)
	}
	if in.ResourceVersion != stored.ResourceVersion {
		return nil, apierror.New(apierror.ErrConflict, "nodes %q: the object has been modified", in.Name)
	}
	out := merge(roundTrip(stored), roundTrip(in))
	out.UID, out.CreationTimestamp, out.Spec.PodCIDR, out.Spec.PodCIDRs = stored.UID, stored.CreationTimestamp, stored.Spec.PodCIDR, stored.Spec.PodCIDRs
	f.rv++
	out.ResourceVersion = strconv.Itoa(f.rv)
	f.nodes[in.Name] = out
	return roundTrip(out), nil
}

type fakeLeases struct{ f *fakeAPI }

func (l fakeLeases) Get(_ context.Context, ns, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("get lease"); err != nil {
		return nil, err
	}
	cur, ok := f.leases[ns+"/"+name]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "leases %q not found", name)
	}
	return roundTrip(cur), nil
}

func (l fakeLeases) Create(_ context.Context, lease *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create lease"); err != nil {
		return nil, err
	}
	key := lease.Namespace + "/" + lease.Name
	if _, ok := f.leases[key]; ok {
		return nil, apierror.New(apierror.ErrAlreadyExists, "leases %q already exists", lease.Name)
	}
	lease = roundTrip(lease)
	f.rv++
	lease.ResourceVersion = strconv.Itoa(f.rv)
	f.leases[key] = lease
	return roundTrip(lease), nil
}

func (l fakeLeases) Update(_ context.Context, lease *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("update lease"); err != nil {
		return nil, err
	}
	key := lease.Namespace + "/" + lease.Name
	stored, ok := f.leases[key]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "leases %q not found", lease.Name)
	}
	if stored.ResourceVersion != lease.ResourceVersion {
		return nil, apierror.New(apierror.ErrConflict, "leases %q: the object has been modified", lease.Name)
	}
	lease = roundTrip(lease)
	f.rv++
	lease.ResourceVersion = strconv.Itoa(f.rv)
	f.leases[key] = lease
	return roundTrip(lease), nil
}
