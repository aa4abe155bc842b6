package nodenet

import (
	"net/netip"
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
