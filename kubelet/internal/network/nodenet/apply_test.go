package nodenet_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/kubelet/internal/network/nodenet/fake"
)

// TestApplyRules follows the calls ApplyRules makes on tables Docker was in first; the
// contract suite (nodenettest) holds the fake's tables to the real ones'.
func TestApplyRules(t *testing.T) {
	ipt := fake.NewIPTables()
	// Docker was here first.
	if err := ipt.Append("filter", "FORWARD", "-j", "DOCKER-USER"); err != nil {
		t.Fatal(err)
	}
	ipt.Calls()
	rs := nodenet.Rules(netip.MustParsePrefix("10.244.0.0/16"))
	changed, err := nodenet.ApplyRules(ipt, rs)
	if err != nil || !changed {
		t.Fatalf("first ApplyRules = %v, %v; want a change and no error", changed, err)
	}
	wantCalls := []string{
		"-t filter -N KUBELET-PODNET-FORWARD",
		"-t filter -A KUBELET-PODNET-FORWARD -s 10.244.0.0/16 -m comment --comment minik8s: forward from pods -j ACCEPT",
		"-t filter -A KUBELET-PODNET-FORWARD -d 10.244.0.0/16 -m comment --comment minik8s: forward to pods -j ACCEPT",
		"-t nat -N KUBELET-PODNET-POSTROUTING",
		"-t nat -A KUBELET-PODNET-POSTROUTING -s 10.244.0.0/16 -d 10.244.0.0/16 -m comment --comment minik8s: no NAT between pods -j RETURN",
		"-t nat -A KUBELET-PODNET-POSTROUTING -s 10.244.0.0/16 ! -d 224.0.0.0/4 -m comment --comment minik8s: masquerade pods leaving the cluster -j MASQUERADE",
		"-t filter -I FORWARD 1 -m comment --comment minik8s pod network -j KUBELET-PODNET-FORWARD",
		"-t nat -A POSTROUTING -m comment --comment minik8s pod network -j KUBELET-PODNET-POSTROUTING",
	}
	if d := cmp.Diff(wantCalls, ipt.Calls()); d != "" {
		t.Errorf("first ApplyRules calls (-want +got):\n%s", d)
	}
	if got := ipt.Rules("filter", "FORWARD"); len(got) != 2 || got[1] != "-j DOCKER-USER" {
		t.Errorf("FORWARD = %q, want our jump ahead of Docker's", got)
	}

	// Again: nothing to do.
	if changed, err := nodenet.ApplyRules(ipt, rs); err != nil || changed {
		t.Errorf("second ApplyRules = %v, %v; want no change", changed, err)
	}
	if calls := ipt.Calls(); len(calls) != 0 {
		t.Errorf("second ApplyRules changed %q", calls)
	}

	// Someone deletes a rule; another cluster CIDR makes the old rules stale.
	if err := ipt.DeleteById("nat", nodenet.PostroutingChain, 2); err != nil {
		t.Fatal(err)
	}
	ipt.Calls()
	if _, err := nodenet.ApplyRules(ipt, rs); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{
		"-t nat -A KUBELET-PODNET-POSTROUTING -s 10.244.0.0/16 ! -d 224.0.0.0/4 -m comment --comment minik8s: masquerade pods leaving the cluster -j MASQUERADE",
	}, ipt.Calls()); d != "" {
		t.Errorf("restoring a deleted rule (-want +got):\n%s", d)
	}
	if _, err := nodenet.ApplyRules(ipt, nodenet.Rules(netip.MustParsePrefix("10.32.0.0/12"))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-s 10.32.0.0/12 -m comment --comment minik8s: forward from pods -j ACCEPT",
		"-d 10.32.0.0/12 -m comment --comment minik8s: forward to pods -j ACCEPT",
	}
	if d := cmp.Diff(want, ipt.Rules("filter", nodenet.ForwardChain)); d != "" {
		t.Errorf("forward chain after the cluster CIDR changed (-want +got):\n%s", d)
	}
	if got := ipt.Rules("filter", "FORWARD"); len(got) != 2 {
		t.Errorf("FORWARD = %q, want one jump and Docker's rule", got)
	}

	// Two kubelets that started together both added the jump: one goes.
	jump := rs.Jumps[1]
	if err := ipt.Append("nat", "POSTROUTING", "-j", "DOCKER-POSTROUTING"); err != nil {
		t.Fatal(err)
	}
	if err := ipt.Append(jump.Table, jump.From, jump.Rule...); err != nil {
		t.Fatal(err)
	}
	ipt.Calls()
	if changed, err := nodenet.ApplyRules(ipt, rs); err != nil || !changed {
		t.Fatalf("ApplyRules with a duplicate jump = %v, %v; want a change", changed, err)
	}
	var jumpCalls []string
	for _, c := range ipt.Calls() {
		if strings.Contains(c, " POSTROUTING ") || strings.Contains(c, " FORWARD ") {
			jumpCalls = append(jumpCalls, c)
		}
	}
	if d := cmp.Diff([]string{"-t nat -D POSTROUTING 3"}, jumpCalls); d != "" {
		t.Errorf("changes to the built-in chains (-want +got):\n%s", d)
	}
	want = []string{
		"-m comment --comment minik8s pod network -j KUBELET-PODNET-POSTROUTING",
		"-j DOCKER-POSTROUTING",
	}
	if d := cmp.Diff(want, ipt.Rules("nat", "POSTROUTING")); d != "" {
		t.Errorf("POSTROUTING (-want +got):\n%s", d)
	}
}
