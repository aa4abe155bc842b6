package leader

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/workqueue/clock"
)

func TestElection(t *testing.T) {
	clk := clock.NewFake(time.Unix(1000, 0))
	leases := NewFakeLeases()
	cand := func(id string) *Elector {
		return New(Config{Leases: leases, Namespace: "kube-system", Name: "kube-scheduler", Identity: id, Clock: clk})
	}
	a, b := cand("a"), cand("b")
	ctx := t.Context()
	check := func(t *testing.T, wantA, wantB bool, holder string) {
		t.Helper()
		if a.IsLeader() != wantA || b.IsLeader() != wantB {
			t.Fatalf("leaders a=%v b=%v, want a=%v b=%v", a.IsLeader(), b.IsLeader(), wantA, wantB)
		}
		if got := leases.Holder("kube-system", "kube-scheduler"); got != holder {
			t.Fatalf("holder %q, want %q", got, holder)
		}
	}
	t.Run("first creates and leads", func(t *testing.T) {
		a.tick(ctx)
		b.tick(ctx)
		check(t, true, false, "a")
	})
	t.Run("renewals keep the lead", func(t *testing.T) {
		for range 10 {
			clk.Step(2 * time.Second)
			a.tick(ctx)
			b.tick(ctx)
		}
		check(t, true, false, "a")
	})
	t.Run("not before the lease expires", func(t *testing.T) {
		clk.Step(14 * time.Second) // a is silent
		b.tick(ctx)
		check(t, true, false, "a")
	})
	t.Run("takeover after expiry", func(t *testing.T) {
		clk.Step(2 * time.Second)
		b.tick(ctx)
		if !b.IsLeader() {
			t.Fatal("b did not take over an expired lease")
		}
		a.tick(ctx) // a sees b's renewal and steps down
		check(t, false, true, "b")
		l, _ := leases.Get(ctx, "kube-system", "kube-scheduler", metav1GetOptions())
		if got := *l.Spec.LeaseTransitions; got != 1 {
			t.Errorf("leaseTransitions = %d, want 1", got)
		}
	})
	t.Run("failed renewals step down after the deadline", func(t *testing.T) {
		leases.Err = errors.New("apiserver down")
		clk.Step(2 * time.Second)
		b.tick(ctx)
		if !b.IsLeader() {
			t.Fatal("one failed renewal lost the lead")
		}
		clk.Step(DefaultRenewDeadline)
		b.tick(ctx)
		if b.IsLeader() {
			t.Fatal("still leader after the renew deadline")
		}
		leases.Err = nil
	})
	t.Run("release lets the other take over at once", func(t *testing.T) {
		b.tick(ctx)
		check(t, false, true, "b")
		b.release()
		a.tick(ctx)
		check(t, true, false, "a")
	})
}

func metav1GetOptions() metav1.GetOptions { return metav1.GetOptions{} }
