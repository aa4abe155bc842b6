package leader

import (
	"context"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// FakeLeases is an in-memory Leases with resourceVersions and conflicts, for tests. Set Err to
// make every call fail.
type FakeLeases struct {
	mu     sync.Mutex
	rv     int
	leases map[string]*coordinationv1.Lease
	Err    error
}

// NewFakeLeases returns an empty FakeLeases.
func NewFakeLeases() *FakeLeases { return &FakeLeases{leases: map[string]*coordinationv1.Lease{}} }

func (f *FakeLeases) Get(_ context.Context, ns, name string, _ metav1.GetOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	l, ok := f.leases[ns+"/"+name]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "lease %s not found", name)
	}
	return l.DeepCopy(), nil
}

func (f *FakeLeases) Create(_ context.Context, l *coordinationv1.Lease, _ metav1.CreateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	k := l.Namespace + "/" + l.Name
	if _, ok := f.leases[k]; ok {
		return nil, apierror.New(apierror.ErrAlreadyExists, "lease %s exists", l.Name)
	}
	return f.storeLocked(k, l), nil
}

func (f *FakeLeases) Update(_ context.Context, l *coordinationv1.Lease, _ metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Err != nil {
		return nil, f.Err
	}
	k := l.Namespace + "/" + l.Name
	cur, ok := f.leases[k]
	if !ok {
		return nil, apierror.New(apierror.ErrNotFound, "lease %s not found", l.Name)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		return nil, apierror.New(apierror.ErrConflict, "lease %s was modified", l.Name)
	}
	return f.storeLocked(k, l), nil
}

// Holder is the lease's holderIdentity ("" when none).
func (f *FakeLeases) Holder(ns, name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.leases[ns+"/"+name]; ok && l.Spec.HolderIdentity != nil {
		return *l.Spec.HolderIdentity
	}
	return ""
}

func (f *FakeLeases) storeLocked(k string, l *coordinationv1.Lease) *coordinationv1.Lease {
	f.rv++
	c := l.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.leases[k] = c
	return c.DeepCopy()
}
