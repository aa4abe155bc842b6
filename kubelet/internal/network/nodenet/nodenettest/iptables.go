package nodenettest

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/network/nodenet"
)

// IPTablesFactory returns the tables of a fresh network namespace (built-in chains, empty,
// policy ACCEPT); it registers its own cleanup.
type IPTablesFactory func(t *testing.T) nodenet.IPTables

// RunIPTables runs the iptables contract, each case on tables of its own.
func RunIPTables(t *testing.T, newIPT IPTablesFactory) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, ipt nodenet.IPTables)
	}{
		{"BuiltinChains", testBuiltinChains},
		{"NewChain", testNewChain},
		{"ListsRulesAsIPTablesPrintsThem", testListing},
		{"InsertAndDeleteByNumber", testInsertDelete},
		{"MissingChainFails", testMissingChain},
		{"ApplyRulesConverges", testApplyRules},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newIPT(t)) })
	}
}

const chain = "MK8S-TEST"

// Rules in the order iptables prints their parts, so they list as written.
var (
	ruleA = []string{"-s", "10.250.0.0/16", "-m", "comment", "--comment", "from pods", "-j", "ACCEPT"}
	ruleB = []string{"-d", "10.250.0.0/16", "-j", "ACCEPT"}
	ruleC = []string{"-s", "10.250.0.0/16", "!", "-d", "224.0.0.0/4", "-j", "RETURN"}
)

func listed(rule []string) string {
	words := make([]string, len(rule))
	for i, w := range rule {
		if strings.Contains(w, " ") {
			w = `"` + w + `"`
		}
		words[i] = w
	}
	return "-A " + chain + " " + strings.Join(words, " ")
}

func wantList(t *testing.T, ipt nodenet.IPTables, table, name string, want ...string) {
	t.Helper()
	got, err := ipt.List(table, name)
	if err != nil {
		t.Fatalf("List(%s, %s): %v", table, name, err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s %s (-want +got):\n%s", table, name, d)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func testBuiltinChains(t *testing.T, ipt nodenet.IPTables) {
	for _, c := range [][2]string{{"filter", "FORWARD"}, {"filter", "INPUT"}, {"nat", "POSTROUTING"}, {"nat", "PREROUTING"}} {
		ok, err := ipt.ChainExists(c[0], c[1])
		if err != nil || !ok {
			t.Errorf("ChainExists(%s, %s) = %v, %v; want true", c[0], c[1], ok, err)
		}
	}
	if ok, err := ipt.ChainExists("filter", chain); err != nil || ok {
		t.Errorf("ChainExists of a chain never made = %v, %v; want false", ok, err)
	}
	wantList(t, ipt, "filter", "FORWARD", "-P FORWARD ACCEPT")
	wantList(t, ipt, "nat", "POSTROUTING", "-P POSTROUTING ACCEPT")
}

func testNewChain(t *testing.T, ipt nodenet.IPTables) {
	must(t, "NewChain", ipt.NewChain("nat", chain))
	if ok, err := ipt.ChainExists("nat", chain); err != nil || !ok {
		t.Errorf("ChainExists after NewChain = %v, %v", ok, err)
	}
	if ok, err := ipt.ChainExists("filter", chain); err != nil || ok {
		t.Errorf("a chain made in nat exists in filter (%v, %v)", ok, err)
	}
	wantList(t, ipt, "nat", chain, "-N "+chain)
	if err := ipt.NewChain("nat", chain); err == nil {
		t.Error("NewChain of an existing chain succeeded")
	}
}

func testListing(t *testing.T, ipt nodenet.IPTables) {
	must(t, "NewChain", ipt.NewChain("filter", chain))
	for _, r := range [][]string{ruleA, ruleB, ruleC} {
		must(t, "Append", ipt.Append("filter", chain, r...))
	}
	wantList(t, ipt, "filter", chain, "-N "+chain, listed(ruleA), listed(ruleB), listed(ruleC))
	// What the reconciler relies on: the listing reads back as the rules appended.
	got, err := ipt.List("filter", chain)
	must(t, "List", err)
	if ch := nodenet.PlanChain(got, [][]string{ruleA, ruleB, ruleC}); len(ch.Append)+len(ch.Delete) != 0 {
		t.Errorf("PlanChain of the listing = %+v, want nothing to do", ch)
	}
}

func testInsertDelete(t *testing.T, ipt nodenet.IPTables) {
	must(t, "NewChain", ipt.NewChain("filter", chain))
	must(t, "Append", ipt.Append("filter", chain, ruleB...))
	must(t, "Insert at 1", ipt.Insert("filter", chain, 1, ruleA...))
	must(t, "Insert at the end", ipt.Insert("filter", chain, 3, ruleC...))
	wantList(t, ipt, "filter", chain, "-N "+chain, listed(ruleA), listed(ruleB), listed(ruleC))
	if err := ipt.Insert("filter", chain, 5, ruleB...); err == nil {
		t.Error("Insert past the end succeeded")
	}
	must(t, "DeleteById 2", ipt.DeleteById("filter", chain, 2))
	wantList(t, ipt, "filter", chain, "-N "+chain, listed(ruleA), listed(ruleC))
	for _, n := range []int{3, 0} {
		if err := ipt.DeleteById("filter", chain, n); err == nil {
			t.Errorf("DeleteById %d of a chain with 2 rules succeeded", n)
		}
	}
	wantList(t, ipt, "filter", chain, "-N "+chain, listed(ruleA), listed(ruleC))
	// Built-in chains take rules the same way.
	must(t, "Insert into FORWARD", ipt.Insert("filter", "FORWARD", 1, "-j", chain))
	wantList(t, ipt, "filter", "FORWARD", "-P FORWARD ACCEPT", "-A FORWARD -j "+chain)
}

func testMissingChain(t *testing.T, ipt nodenet.IPTables) {
	if _, err := ipt.List("filter", chain); err == nil {
		t.Error("List of a missing chain succeeded")
	}
	if err := ipt.Append("filter", chain, ruleB...); err == nil {
		t.Error("Append to a missing chain succeeded")
	}
	if err := ipt.Insert("filter", chain, 1, ruleB...); err == nil {
		t.Error("Insert into a missing chain succeeded")
	}
	if err := ipt.DeleteById("filter", chain, 1); err == nil {
		t.Error("DeleteById in a missing chain succeeded")
	}
	if ok, err := ipt.ChainExists("filter", chain); err != nil || ok {
		t.Errorf("a failed write made the chain (%v, %v)", ok, err)
	}
}

// testApplyRules runs the pod network's own rules: applied once they change the tables, again
// nothing, and a rule someone deleted comes back.
func testApplyRules(t *testing.T, ipt nodenet.IPTables) {
	rs := nodenet.Rules(netip.MustParsePrefix("10.250.0.0/16"))
	changed, err := nodenet.ApplyRules(ipt, rs)
	if err != nil || !changed {
		t.Fatalf("first ApplyRules = %v, %v; want a change", changed, err)
	}
	before := map[string][]string{}
	for _, c := range [][2]string{{"filter", nodenet.ForwardChain}, {"nat", nodenet.PostroutingChain}, {"filter", "FORWARD"}, {"nat", "POSTROUTING"}} {
		l, err := ipt.List(c[0], c[1])
		must(t, "List", err)
		before[c[0]+" "+c[1]] = l
	}
	if n := len(before["filter FORWARD"]); n != 2 {
		t.Errorf("FORWARD has %d lines, want its policy and our jump: %q", n, before["filter FORWARD"])
	}
	if changed, err := nodenet.ApplyRules(ipt, rs); err != nil || changed {
		t.Errorf("second ApplyRules = %v, %v; want no change", changed, err)
	}
	must(t, "DeleteById", ipt.DeleteById("nat", nodenet.PostroutingChain, 1))
	if changed, err := nodenet.ApplyRules(ipt, rs); err != nil || !changed {
		t.Errorf("ApplyRules after a rule was deleted = %v, %v; want a change", changed, err)
	}
	for key, want := range before {
		table, name, _ := strings.Cut(key, " ")
		if key == "nat "+nodenet.PostroutingChain {
			// The deleted rule comes back last.
			want = append([]string{want[0]}, want[2], want[1])
		}
		wantList(t, ipt, table, name, want...)
	}
}
