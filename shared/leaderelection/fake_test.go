package leaderelection

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// fakeLeases is an in-memory Leases with the apiserver's resourceVersions and conflicts. Set
// err to make every call fail, as an unreachable apiserver would.
type fakeLeases struct {
	mu     sync.Mutex
	rv     int
	leases map[string]*coordinationv1.Lease
	err    error
	gets   atomic.Int64
}

func newFakeLeases() *fakeLeases { return &fakeLeases{leases: map[string]*coordinationv1.Lease{}} }

func (f *fakeLeases) Get(_ context.Context, ns, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.gets.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	l, ok := f.leases[ns+"/"+name]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "lease %s/%s not found", ns, name)
	}
	return l.DeepCopy(), nil
}

func (f *fakeLeases) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	k := l.Namespace + "/" + l.Name
	if _, ok := f.leases[k]; ok {
		return nil, apierror.New(apierror.ErrAlreadyExists, "lease %s exists", k)
	}
	return f.storeLocked(k, l), nil
}

func (f *fakeLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	k := l.Namespace + "/" + l.Name
	cur, ok := f.leases[k]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "lease %s not found", k)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		return nil, apierror.New(apierror.ErrConflict, "lease %s was modified", k)
	}
	return f.storeLocked(k, l), nil
}

func (f *fakeLeases) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// lease is the stored lease, or nil.
func (f *fakeLeases) lease(ns, name string) *coordinationv1.Lease {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leases[ns+"/"+name].DeepCopy()
}

// holder is the lease's holderIdentity ("" when none).
func (f *fakeLeases) holder(ns, name string) string {
	if l := f.lease(ns, name); l != nil {
		return holder(l.Spec)
	}
	return ""
}

// mutate changes the stored lease behind the candidates' backs, as another writer would.
func (f *fakeLeases) mutate(ns, name string, change func(*coordinationv1.LeaseSpec)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := ns + "/" + name
	l := f.leases[k].DeepCopy()
	change(&l.Spec)
	f.storeLocked(k, l)
}

func (f *fakeLeases) storeLocked(k string, l *coordinationv1.Lease) *coordinationv1.Lease {
	f.rv++
	c := l.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.leases[k] = c
	return c.DeepCopy()
}
