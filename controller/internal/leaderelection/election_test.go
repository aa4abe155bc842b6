package leaderelection

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestCanAcquire(t *testing.T) {
	str := func(s string) *string { return &s }
	dur := func(n int32) *int32 { return &n }
	held := func(holder string, renewed time.Time) *coordinationv1.Lease {
		r := metav1.NewMicroTime(renewed)
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: str(holder), RenewTime: &r, LeaseDurationSeconds: dur(15)}}
	}
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"no holder", &coordinationv1.Lease{}, true},
		{"released", held("", t0), true},
		{"ours", held("me", t0.Add(-time.Hour)), true},
		{"someone else's, fresh", held("other", t0.Add(-14*time.Second)), false},
		{"someone else's, expired", held("other", t0.Add(-15*time.Second)), true},
		{"someone else's without renew time", &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: str("other")}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CanAcquire(tt.lease, "me", t0); got != tt.want {
				t.Errorf("CanAcquire = %v, want %v", got, tt.want)
			}
		})
	}
}

// memLeases is an in-memory API with the apiserver's optimistic concurrency.
type memLeases struct {
	mu    sync.Mutex
	rv    int
	lease *coordinationv1.Lease
	gets  atomic.Int64
}

func (m *memLeases) Get(_ context.Context, ns, name string) (*coordinationv1.Lease, error) {
	m.gets.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil {
		return nil, apierror.New(apierror.ErrNotFound, "lease %s/%s not found", ns, name)
	}
	return m.lease.DeepCopy(), nil
}

func (m *memLeases) Create(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease != nil {
		return nil, apierror.New(apierror.ErrAlreadyExists, "lease exists")
	}
	m.rv++
	m.lease = l.DeepCopy()
	m.lease.ResourceVersion = strconv.Itoa(m.rv)
	return m.lease.DeepCopy(), nil
}

func (m *memLeases) Update(_ context.Context, l *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil || l.ResourceVersion != m.lease.ResourceVersion {
		return nil, apierror.New(apierror.ErrConflict, "stale lease")
	}
	m.rv++
	m.lease = l.DeepCopy()
	m.lease.ResourceVersion = strconv.Itoa(m.rv)
	return m.lease.DeepCopy(), nil
}

func (m *memLeases) holder() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lease == nil || m.lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *m.lease.Spec.HolderIdentity
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOneLeaderAndHandover runs two candidates: only the first leads while it renews, and when
// it stops it releases the lease so the second takes over without waiting for expiry.
func TestOneLeaderAndHandover(t *testing.T) {
	api := &memLeases{}
	cfg := func(id string) Config {
		// A long lease, so a handover that waited for expiry instead of the release would
		// time the test out.
		return Config{Namespace: "kube-system", Name: "kube-controller-manager", Identity: id, API: api,
			LeaseDuration: time.Hour, RenewDeadline: 30 * time.Minute, RetryPeriod: 10 * time.Millisecond}
	}
	var leading sync.Map
	lead := func(id string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			leading.Store(id, true)
			<-ctx.Done()
			leading.Delete(id)
			return nil
		}
	}
	ctxA, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	errA := make(chan error, 1)
	go func() { errA <- Run(ctxA, cfg("a"), lead("a")) }()
	waitFor(t, "a to lead", func() bool { _, ok := leading.Load("a"); return ok })

	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	errB := make(chan error, 1)
	go func() { errB <- Run(ctxB, cfg("b"), lead("b")) }()
	// Let b try many times while a renews.
	start := api.gets.Load()
	waitFor(t, "b's attempts", func() bool { return api.gets.Load() > start+20 })
	if _, ok := leading.Load("b"); ok {
		t.Fatal("b leads while a holds the lease")
	}
	if h := api.holder(); h != "a" {
		t.Fatalf("holder = %q, want a", h)
	}

	cancelA()
	if err := <-errA; err != nil {
		t.Fatalf("a's Run: %v", err)
	}
	waitFor(t, "b to lead after a released", func() bool { _, ok := leading.Load("b"); return ok })
	if h := api.holder(); h != "b" {
		t.Errorf("holder = %q, want b", h)
	}
	cancelB()
	if err := <-errB; err != nil {
		t.Fatalf("b's Run: %v", err)
	}
}

func TestLostLeadership(t *testing.T) {
	api := &memLeases{}
	cfg := Config{Namespace: "kube-system", Name: "x", Identity: "a", API: api,
		LeaseDuration: time.Hour, RenewDeadline: 50 * time.Millisecond, RetryPeriod: 10 * time.Millisecond}
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- Run(t.Context(), cfg, func(ctx context.Context) error { close(started); <-ctx.Done(); return nil })
	}()
	<-started
	// Someone else takes the lease by force: every renewal now fails.
	api.mu.Lock()
	other := "intruder"
	api.lease.Spec.HolderIdentity = &other
	now := metav1.NewMicroTime(time.Now())
	api.lease.Spec.RenewTime = &now
	api.mu.Unlock()
	select {
	case err := <-errc:
		if err != ErrLostLeadership {
			t.Fatalf("Run = %v, want ErrLostLeadership", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not notice it lost the lease")
	}
}

func TestValidate(t *testing.T) {
	c := Config{Namespace: "ns", Name: "n", Identity: "i", LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}
	if err := c.Validate(); err == nil {
		t.Error("renew deadline longer than the lease: want an error")
	}
	c = Config{Namespace: "ns", Name: "n", Identity: "i"}
	if err := c.Validate(); err != nil || c.LeaseDuration != DefaultLeaseDuration {
		t.Errorf("defaults: err %v, lease duration %s", err, c.LeaseDuration)
	}
}
