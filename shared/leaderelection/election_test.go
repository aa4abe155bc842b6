package leaderelection

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/testwait"
	"minik8s.io/shared/workqueue/clock"
)

const ns, name = "kube-system", "kube-scheduler"

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func TestValidate(t *testing.T) {
	leases := newFakeLeases()
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"defaults", Config{Leases: leases, Namespace: "ns", Name: "n", Identity: "i"}, false},
		{"no client", Config{Namespace: "ns", Name: "n", Identity: "i"}, true},
		{"no identity", Config{Leases: leases, Namespace: "ns", Name: "n"}, true},
		{"lease under a second", Config{Leases: leases, Namespace: "ns", Name: "n", Identity: "i",
			LeaseDuration: 500 * time.Millisecond, RenewDeadline: 200 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, true},
		{"renew deadline not shorter than the lease", Config{Leases: leases, Namespace: "ns", Name: "n", Identity: "i",
			LeaseDuration: time.Second, RenewDeadline: 2 * time.Second}, true},
		{"retry period not shorter than the renew deadline", Config{Leases: leases, Namespace: "ns", Name: "n", Identity: "i",
			RetryPeriod: DefaultRenewDeadline}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
	c := tests[0].cfg
	_ = c.Validate()
	got := [3]time.Duration{c.LeaseDuration, c.RenewDeadline, c.RetryPeriod}
	if want := [3]time.Duration{DefaultLeaseDuration, DefaultRenewDeadline, DefaultRetryPeriod}; got != want {
		t.Errorf("defaults = %v, want %v", got, want)
	}
}

func TestCanTake(t *testing.T) {
	str := func(s string) *string { return &s }
	secs := func(n int32) *int32 { return &n }
	held := func(holder string) coordinationv1.LeaseSpec {
		// The holder's clock is an hour behind ours: expiry must not depend on it.
		r := metav1.NewMicroTime(t0.Add(-time.Hour))
		return coordinationv1.LeaseSpec{HolderIdentity: str(holder), RenewTime: &r, LeaseDurationSeconds: secs(15)}
	}
	tests := []struct {
		name     string
		spec     coordinationv1.LeaseSpec
		observed time.Time // when we last saw the lease change
		want     bool
	}{
		{"no holder", coordinationv1.LeaseSpec{}, t0, true},
		{"released", held(""), t0, true},
		{"ours", held("me"), t0.Add(-time.Hour), true},
		{"someone else's, changed 14s ago", held("other"), t0.Add(-14 * time.Second), false},
		{"someone else's, unchanged for 15s", held("other"), t0.Add(-15 * time.Second), true},
		{"someone else's without a duration uses ours", coordinationv1.LeaseSpec{HolderIdentity: str("other")}, t0.Add(-14 * time.Second), false},
		{"someone else's without a duration, expired", coordinationv1.LeaseSpec{HolderIdentity: str("other")}, t0.Add(-15 * time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := canTake(tt.spec, "me", tt.observed, t0, 15*time.Second); got != tt.want {
				t.Errorf("canTake = %v, want %v", got, tt.want)
			}
		})
	}
}

// wantSpec is the Lease spec a candidate should have written.
func wantSpec(holder string, acquired, renewed time.Time, seconds, transitions int32) coordinationv1.LeaseSpec {
	a, r := metav1.NewMicroTime(acquired), metav1.NewMicroTime(renewed)
	return coordinationv1.LeaseSpec{HolderIdentity: &holder, AcquireTime: &a, RenewTime: &r,
		LeaseDurationSeconds: &seconds, LeaseTransitions: &transitions}
}

// TestElection steps two candidates through a term, a takeover, an apiserver outage and a
// release on a fake clock, checking who leads and what the Lease records after each step.
func TestElection(t *testing.T) {
	clk := clock.NewFake(t0)
	leases := newFakeLeases()
	cand := func(id string) *Elector {
		e, err := New(Config{Leases: leases, Namespace: ns, Name: name, Identity: id, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := cand("a"), cand("b")
	ctx := t.Context()
	check := func(t *testing.T, wantA, wantB bool, want coordinationv1.LeaseSpec) {
		t.Helper()
		if a.IsLeader() != wantA || b.IsLeader() != wantB {
			t.Errorf("leaders a=%v b=%v, want a=%v b=%v", a.IsLeader(), b.IsLeader(), wantA, wantB)
		}
		if diff := cmp.Diff(want, leases.lease(ns, name).Spec); diff != "" {
			t.Errorf("lease spec (-want +got):\n%s", diff)
		}
	}

	t.Run("first creates and leads", func(t *testing.T) {
		a.attempt(ctx)
		b.attempt(ctx)
		check(t, true, false, wantSpec("a", t0, t0, 15, 0))
	})
	t.Run("renewals keep the lead and the acquire time", func(t *testing.T) {
		for range 10 {
			clk.Step(2 * time.Second)
			a.attempt(ctx)
			b.attempt(ctx)
		}
		check(t, true, false, wantSpec("a", t0, t0.Add(20*time.Second), 15, 0))
	})
	t.Run("a silent leader stops at its renew deadline, before the lease expires", func(t *testing.T) {
		clk.Step(14 * time.Second) // a is silent; b saw the lease change 14 s ago
		b.attempt(ctx)
		check(t, false, false, wantSpec("a", t0, t0.Add(20*time.Second), 15, 0))
	})
	takeover := t0.Add(36 * time.Second)
	t.Run("takeover after expiry counts a transition", func(t *testing.T) {
		clk.Step(2 * time.Second)
		if !b.attempt(ctx) {
			t.Fatal("b did not take over an expired lease")
		}
		if a.attempt(ctx) || a.attempt(ctx) {
			t.Error("a leads again after b took over")
		}
		check(t, false, true, wantSpec("b", takeover, takeover, 15, 1))
	})
	t.Run("failed renewals keep the lead until the deadline", func(t *testing.T) {
		leases.setErr(errors.New("apiserver down"))
		clk.Step(2 * time.Second)
		if !b.attempt(ctx) || !b.IsLeader() {
			t.Fatal("one failed renewal lost the lead")
		}
		clk.Step(DefaultRenewDeadline - 2*time.Second)
		if b.IsLeader() {
			t.Error("IsLeader true at the renew deadline")
		}
		if b.attempt(ctx) {
			t.Error("still leading after the renew deadline")
		}
		leases.setErr(nil)
		check(t, false, false, wantSpec("b", takeover, takeover, 15, 1))
	})
	t.Run("the holder renews again once the apiserver is back", func(t *testing.T) {
		a.attempt(ctx) // a saw b's lease change only 10 s ago
		b.attempt(ctx)
		now := clk.Now()
		check(t, false, true, wantSpec("b", takeover, now, 15, 1))
	})
	t.Run("release lets the other take over at once", func(t *testing.T) {
		clk.Step(time.Second)
		released := clk.Now()
		b.release(ctx)
		check(t, false, false, wantSpec("", released, released, 1, 1))
		clk.Step(time.Second)
		a.attempt(ctx)
		now := clk.Now()
		check(t, true, false, wantSpec("a", now, now, 15, 2))
	})
}

// TestStartCampaignsAgain checks the mode the scheduler uses: Start keeps campaigning after it
// loses the lead, IsLeader follows, and cancelling Start releases the lease.
func TestStartCampaignsAgain(t *testing.T) {
	clk := clock.NewFake(t0)
	leases := newFakeLeases()
	e, err := New(Config{Leases: leases, Namespace: ns, Name: name, Identity: "a", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Start(ctx) }()
	// The first attempt is immediate; the loop then waits on the fake clock.
	testwait.For(t, "a to lead", func() bool { return e.IsLeader() && clk.Waiters() > 0 })

	leases.setErr(errors.New("apiserver down"))
	clk.Step(DefaultRenewDeadline)
	if e.IsLeader() {
		t.Fatal("IsLeader true after the renew deadline without a renewal")
	}
	leases.setErr(nil)
	testwait.For(t, "a to lead again", func() bool {
		if clk.Waiters() > 0 {
			clk.Step(DefaultRetryPeriod)
		}
		return e.IsLeader()
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start = %v", err)
	}
	if e.IsLeader() {
		t.Error("IsLeader true after Start returned")
	}
	if h := leases.holder(ns, name); h != "" {
		t.Errorf("holder after Start returned = %q, want the lease released", h)
	}
}

// realConfig is for the Run tests, which use the wall clock with short periods.
func realConfig(leases Leases, id string, lease, renew time.Duration) Config {
	return Config{Leases: leases, Namespace: ns, Name: "kube-controller-manager", Identity: id,
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: 10 * time.Millisecond}
}

func mustNew(t *testing.T, cfg Config) *Elector {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRunHandover runs two candidates the way the controller-manager does: only the first
// leads while it renews, and when it stops it releases the lease so the second takes over
// without waiting for expiry.
func TestRunHandover(t *testing.T) {
	leases := newFakeLeases()
	// A long lease, so a handover that waited for expiry instead of the release would time
	// the test out.
	cfg := func(id string) Config { return realConfig(leases, id, time.Hour, 30*time.Minute) }
	var leading sync.Map
	lead := func(id string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			leading.Store(id, true)
			<-ctx.Done()
			leading.Delete(id)
			return ctx.Err()
		}
	}
	isLeading := func(id string) bool { _, ok := leading.Load(id); return ok }

	ctxA, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	errA := make(chan error, 1)
	go func() { errA <- mustNew(t, cfg("a")).Run(ctxA, lead("a")) }()
	testwait.For(t, "a to lead", func() bool { return isLeading("a") })

	ctxB, cancelB := context.WithCancel(t.Context())
	defer cancelB()
	errB := make(chan error, 1)
	go func() { errB <- mustNew(t, cfg("b")).Run(ctxB, lead("b")) }()
	start := leases.gets.Load()
	testwait.For(t, "b's attempts while a renews", func() bool { return leases.gets.Load() > start+20 })
	if isLeading("b") {
		t.Fatal("b leads while a holds the lease")
	}
	if h := leases.holder(ns, "kube-controller-manager"); h != "a" {
		t.Fatalf("holder = %q, want a", h)
	}

	cancelA()
	if err := <-errA; err != nil {
		t.Fatalf("a's Run = %v, want nil after its context ended", err)
	}
	if isLeading("a") {
		t.Error("a's lead function still running after Run returned")
	}
	testwait.For(t, "b to lead after a released", func() bool { return isLeading("b") })
	if h := leases.holder(ns, "kube-controller-manager"); h != "b" {
		t.Errorf("holder = %q, want b", h)
	}
	cancelB()
	if err := <-errB; err != nil {
		t.Fatalf("b's Run = %v", err)
	}
}

// TestRunLostLeadership checks that Run ends the term, cancelling lead, when the lease is taken
// or cannot be renewed within the deadline.
func TestRunLostLeadership(t *testing.T) {
	const renew = 100 * time.Millisecond
	tests := []struct {
		name string
		// break makes every later renewal fail.
		breakIt     func(f *fakeLeases)
		minDuration time.Duration
	}{
		{"another holder took the lease", func(f *fakeLeases) {
			f.mutate(ns, "kube-controller-manager", func(s *coordinationv1.LeaseSpec) {
				other := "intruder"
				s.HolderIdentity = &other
			})
		}, 0},
		{"the apiserver is unreachable", func(f *fakeLeases) { f.setErr(errors.New("apiserver down")) }, renew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leases := newFakeLeases()
			e := mustNew(t, realConfig(leases, "a", time.Hour, renew))
			started := make(chan struct{})
			errc := make(chan error, 1)
			go func() {
				errc <- e.Run(t.Context(), func(ctx context.Context) error { close(started); <-ctx.Done(); return nil })
			}()
			<-started
			tt.breakIt(leases)
			select {
			case err := <-errc:
				ended := time.Now()
				if !errors.Is(err, ErrLostLeadership) {
					t.Fatalf("Run = %v, want ErrLostLeadership", err)
				}
				// Measured from the last renewal that reached the store, whenever a loaded
				// machine let it happen (a lease taken by another holder ends at once).
				if tt.minDuration > 0 {
					last := leases.lease(ns, "kube-controller-manager").Spec.RenewTime.Time
					if took := ended.Sub(last); took < tt.minDuration-time.Millisecond {
						t.Errorf("gave up %s after the last renewal, before the renew deadline %s", took, tt.minDuration)
					}
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not notice it lost the lease")
			}
			if e.IsLeader() {
				t.Error("IsLeader true after the term ended")
			}
		})
	}
}

// TestRunLeadFails checks that an error from lead ends Run with that error, and the lease is
// released for another replica.
func TestRunLeadFails(t *testing.T) {
	leases := newFakeLeases()
	boom := errors.New("boom")
	err := mustNew(t, realConfig(leases, "a", time.Hour, time.Minute)).Run(t.Context(), func(context.Context) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want %v", err, boom)
	}
	if h := leases.holder(ns, "kube-controller-manager"); h != "" {
		t.Errorf("holder = %q, want the lease released", h)
	}
}
