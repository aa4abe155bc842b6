package nodenet

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRules(t *testing.T) {
	got := Rules(netip.MustParsePrefix("10.244.0.0/16"))
	want := RuleSet{
		Chains: []Chain{
			{Table: "filter", Name: "KUBELET-PODNET-FORWARD", Rules: [][]string{
				{"-s", "10.244.0.0/16", "-m", "comment", "--comment", "minik8s: forward from pods", "-j", "ACCEPT"},
				{"-d", "10.244.0.0/16", "-m", "comment", "--comment", "minik8s: forward to pods", "-j", "ACCEPT"},
			}},
			{Table: "nat", Name: "KUBELET-PODNET-POSTROUTING", Rules: [][]string{
				{"-s", "10.244.0.0/16", "-d", "10.244.0.0/16", "-m", "comment", "--comment", "minik8s: no NAT between pods", "-j", "RETURN"},
				{"-s", "10.244.0.0/16", "!", "-d", "224.0.0.0/4", "-m", "comment", "--comment", "minik8s: masquerade pods leaving the cluster", "-j", "MASQUERADE"},
			}},
		},
		Jumps: []Jump{
			{Table: "filter", From: "FORWARD", Insert: true, Rule: []string{"-m", "comment", "--comment", "minik8s pod network", "-j", "KUBELET-PODNET-FORWARD"}},
			{Table: "nat", From: "POSTROUTING", Rule: []string{"-m", "comment", "--comment", "minik8s pod network", "-j", "KUBELET-PODNET-POSTROUTING"}},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Rules (-want +got):\n%s", d)
	}
	if a, b := Rules(netip.MustParsePrefix("10.244.3.7/16")), Rules(netip.MustParsePrefix("10.244.0.0/16")); !cmp.Equal(a, b) {
		t.Error("an unmasked cluster CIDR gives other rules than the masked one")
	}
}

func TestPlanChain(t *testing.T) {
	want := [][]string{
		{"-s", "10.244.0.0/16", "-m", "comment", "--comment", "from pods", "-j", "ACCEPT"},
		{"-d", "10.244.0.0/16", "-m", "comment", "--comment", "to pods", "-j", "ACCEPT"},
	}
	for _, tt := range []struct {
		name   string
		listed []string
		want   ChainChanges
	}{
		{"new chain", []string{"-N C"}, ChainChanges{Append: want}},
		{"in place", []string{"-N C", `-A C -s 10.244.0.0/16 -m comment --comment "from pods" -j ACCEPT`, `-A C -d 10.244.0.0/16 -m comment --comment "to pods" -j ACCEPT`}, ChainChanges{}},
		{"in another order, words too", []string{"-N C", `-A C -d 10.244.0.0/16 -j ACCEPT -m comment --comment "to pods"`, `-A C -s 10.244.0.0/16 -m comment --comment "from pods" -j ACCEPT`}, ChainChanges{}},
		{"one missing", []string{"-N C", `-A C -d 10.244.0.0/16 -m comment --comment "to pods" -j ACCEPT`}, ChainChanges{Append: want[:1]}},
		{"stale and duplicate rules go, last first", []string{"-N C",
			`-A C -s 10.99.0.0/16 -m comment --comment "from pods" -j ACCEPT`,
			`-A C -s 10.244.0.0/16 -m comment --comment "from pods" -j ACCEPT`,
			`-A C -s 10.244.0.0/16 -m comment --comment "from pods" -j ACCEPT`,
			`-A C -j DROP`,
		}, ChainChanges{Delete: []int{4, 3, 1}, Append: want[1:]}},
		{"quoted quotes", []string{"-N C", `-A C -m comment --comment "say \"hi\"" -j ACCEPT`}, ChainChanges{Delete: []int{1}, Append: want}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, PlanChain(tt.listed, want)); d != "" {
				t.Errorf("PlanChain (-want +got):\n%s", d)
			}
		})
	}
}

func TestSplitWords(t *testing.T) {
	got := splitWords(`-A C  -m comment --comment "say \"hi\" there" -j ACCEPT`)
	want := []string{"-A", "C", "-m", "comment", "--comment", `say "hi" there`, "-j", "ACCEPT"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("splitWords (-want +got):\n%s", d)
	}
}

func TestApplyRules(t *testing.T) {
	ipt := NewFakeIPTables()
	// Docker was here first.
	if err := ipt.Append("filter", "FORWARD", "-j", "DOCKER-USER"); err != nil {
		t.Fatal(err)
	}
	ipt.Calls()
	rs := Rules(netip.MustParsePrefix("10.244.0.0/16"))
	changed, err := ApplyRules(ipt, rs)
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
	if changed, err := ApplyRules(ipt, rs); err != nil || changed {
		t.Errorf("second ApplyRules = %v, %v; want no change", changed, err)
	}
	if calls := ipt.Calls(); len(calls) != 0 {
		t.Errorf("second ApplyRules changed %q", calls)
	}

	// Someone deletes a rule; another cluster CIDR makes the old rules stale.
	if err := ipt.DeleteById("nat", PostroutingChain, 2); err != nil {
		t.Fatal(err)
	}
	ipt.Calls()
	if _, err := ApplyRules(ipt, rs); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{
		"-t nat -A KUBELET-PODNET-POSTROUTING -s 10.244.0.0/16 ! -d 224.0.0.0/4 -m comment --comment minik8s: masquerade pods leaving the cluster -j MASQUERADE",
	}, ipt.Calls()); d != "" {
		t.Errorf("restoring a deleted rule (-want +got):\n%s", d)
	}
	if _, err := ApplyRules(ipt, Rules(netip.MustParsePrefix("10.32.0.0/12"))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"-s 10.32.0.0/12 -m comment --comment minik8s: forward from pods -j ACCEPT",
		"-d 10.32.0.0/12 -m comment --comment minik8s: forward to pods -j ACCEPT",
	}
	if d := cmp.Diff(want, ipt.Rules("filter", ForwardChain)); d != "" {
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
	if changed, err := ApplyRules(ipt, rs); err != nil || !changed {
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
