package netfiltertest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/rules"
)

// Factory returns a fresh, empty implementation; it registers its own cleanup.
type Factory func(t *testing.T) netfilter.Interface

// Rules used by the suite, written as iptables-save prints them so that both implementations
// read back exactly what was written.
const (
	ruleA1 = `-A MINIK8S-TEST-A -d 10.96.0.10/32 -p tcp -m comment --comment "test/a cluster IP" -m tcp --dport 80 -j MINIK8S-TEST-B`
	ruleB1 = `-A MINIK8S-TEST-B -p tcp -m comment --comment "test/a" -j DNAT --to-destination 10.244.1.2:8080`
	ruleB2 = `-A MINIK8S-TEST-B -p udp -m comment --comment "test/a" -j DNAT --to-destination 10.244.1.3:53`
	ruleC1 = `-A MINIK8S-TEST-C -j RETURN`
	ruleF1 = `-A MINIK8S-TEST-F -p tcp -m comment --comment "test/f has no endpoints" -m tcp --dport 81 -j REJECT --reject-with icmp-port-unreachable`
)

// Jumps for EnsureFirst, as arguments and as iptables prints them in FORWARD, and someone
// else's rules in the same chain.
var (
	jumpX = []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "test external portals", "-j", "MINIK8S-TEST-X"}
	jumpY = []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "test portals", "-j", "MINIK8S-TEST-Y"}
	jumpZ = []string{"-m", "comment", "--comment", `test "forwarding"`, "-j", "MINIK8S-TEST-Z"}
)

const (
	lineX         = `-A FORWARD -m conntrack --ctstate NEW -m comment --comment "test external portals" -j MINIK8S-TEST-X`
	lineY         = `-A FORWARD -m conntrack --ctstate NEW -m comment --comment "test portals" -j MINIK8S-TEST-Y`
	lineZ         = `-A FORWARD -m comment --comment "test \"forwarding\"" -j MINIK8S-TEST-Z`
	foreignJump   = `-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-TEST-FORWARD`
	foreignAccept = `-A FORWARD -s 10.244.0.0/16 -j ACCEPT`
	jumpTargets   = "*filter\n:MINIK8S-TEST-X - [0:0]\n:MINIK8S-TEST-Y - [0:0]\n:MINIK8S-TEST-Z - [0:0]\n:CNI-TEST-FORWARD - [0:0]\nCOMMIT\n"
)

const first = `*nat
:MINIK8S-TEST-A - [0:0]
:MINIK8S-TEST-B - [0:0]
:MINIK8S-TEST-C - [0:0]
` + ruleA1 + "\n" + ruleB1 + "\n" + ruleC1 + `
COMMIT
*filter
:MINIK8S-TEST-F - [0:0]
` + ruleF1 + `
COMMIT
`

// Run runs the contract against the implementation newTables makes.
func Run(t *testing.T, newTables Factory) {
	t.Run("RestoreThenSave", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, first)
		want := rules.State{
			"nat":    {"MINIK8S-TEST-A": {ruleA1}, "MINIK8S-TEST-B": {ruleB1}, "MINIK8S-TEST-C": {ruleC1}},
			"filter": {"MINIK8S-TEST-F": {ruleF1}},
		}
		if diff := cmp.Diff(want, saved(t, nf)); diff != "" {
			t.Errorf("saved chains (-want +got):\n%s", diff)
		}
	})

	t.Run("NoFlushTouchesOnlyNamedChains", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, first)
		// B is refilled, C deleted, A not named (its jump to B still holds), F's table not named.
		restore(t, nf, "*nat\n:MINIK8S-TEST-B - [0:0]\n:MINIK8S-TEST-C - [0:0]\n"+ruleB2+"\n-X MINIK8S-TEST-C\nCOMMIT\n")
		want := rules.State{
			"nat":    {"MINIK8S-TEST-A": {ruleA1}, "MINIK8S-TEST-B": {ruleB2}},
			"filter": {"MINIK8S-TEST-F": {ruleF1}},
		}
		if diff := cmp.Diff(want, saved(t, nf)); diff != "" {
			t.Errorf("saved chains (-want +got):\n%s", diff)
		}
	})

	t.Run("FailedRestoreChangesNothing", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, first)
		before := saved(t, nf)
		bad := "*nat\n:MINIK8S-TEST-B - [0:0]\n" + ruleB2 + "\n-A MINIK8S-TEST-B -j MINIK8S-TEST-MISSING\nCOMMIT\n"
		if err := nf.Restore(t.Context(), []byte(bad)); err == nil {
			t.Fatal("restore of a rule jumping to a missing chain succeeded")
		}
		if diff := cmp.Diff(before, saved(t, nf)); diff != "" {
			t.Errorf("a failed restore changed the chains (-before +after):\n%s", diff)
		}
	})

	t.Run("DeletingAReferencedChainFails", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, first)
		if err := nf.Restore(t.Context(), []byte("*nat\n-X MINIK8S-TEST-B\nCOMMIT\n")); err == nil {
			t.Fatal("deleted a chain that MINIK8S-TEST-A jumps to")
		}
	})

	t.Run("EnsureFirstPutsRulesFirstOnce", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, jumpTargets)
		// Someone else's rule is already in FORWARD.
		restore(t, nf, "*filter\n"+foreignAccept+"\nCOMMIT\n")
		for i, want := range []bool{true, false} {
			ensureFirst(t, nf, want, "filter", "FORWARD", jumpX, jumpY, jumpZ)
			if diff := cmp.Diff([]string{lineX, lineY, lineZ, foreignAccept}, builtinRules(t, nf, "filter", "FORWARD")); diff != "" {
				t.Errorf("FORWARD after call #%d (-want +got):\n%s", i+1, diff)
			}
		}
	})

	t.Run("EnsureFirstMovesOthersBelow", func(t *testing.T) {
		// A CNI plugin inserts its jump at the top after kubeproxy put its own there.
		nf := newTables(t)
		restore(t, nf, jumpTargets)
		restore(t, nf, "*filter\n"+foreignAccept+"\nCOMMIT\n")
		ensureFirst(t, nf, true, "filter", "FORWARD", jumpX, jumpY, jumpZ)
		restore(t, nf, "*filter\n-I"+strings.TrimPrefix(foreignJump, "-A")+"\nCOMMIT\n")
		if got := builtinRules(t, nf, "filter", "FORWARD"); len(got) == 0 || got[0] != foreignJump {
			t.Fatalf("FORWARD after the foreign insert: %q, want %q first", got, foreignJump)
		}
		ensureFirst(t, nf, true, "filter", "FORWARD", jumpX, jumpY, jumpZ)
		ensureFirst(t, nf, false, "filter", "FORWARD", jumpX, jumpY, jumpZ)
		want := []string{lineX, lineY, lineZ, foreignJump, foreignAccept}
		if diff := cmp.Diff(want, builtinRules(t, nf, "filter", "FORWARD")); diff != "" {
			t.Errorf("FORWARD (-want +got):\n%s", diff)
		}
	})

	t.Run("EnsureFirstRestoresOrderAndRemovesCopies", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, jumpTargets)
		// Ours out of order, one twice, between someone else's rules.
		restore(t, nf, "*filter\n"+strings.Join([]string{lineZ, foreignJump, lineY, lineX, foreignAccept, lineZ}, "\n")+"\nCOMMIT\n")
		ensureFirst(t, nf, true, "filter", "FORWARD", jumpX, jumpY, jumpZ)
		want := []string{lineX, lineY, lineZ, foreignJump, foreignAccept}
		if diff := cmp.Diff(want, builtinRules(t, nf, "filter", "FORWARD")); diff != "" {
			t.Errorf("FORWARD (-want +got):\n%s", diff)
		}
		// Ours in place with a copy further down: only the copy goes.
		restore(t, nf, "*filter\n"+lineY+"\nCOMMIT\n")
		ensureFirst(t, nf, true, "filter", "FORWARD", jumpX, jumpY, jumpZ)
		if diff := cmp.Diff(want, builtinRules(t, nf, "filter", "FORWARD")); diff != "" {
			t.Errorf("FORWARD after a copy was appended (-want +got):\n%s", diff)
		}
	})

	t.Run("EnsureFirstTouchesOnlyItsChain", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, jumpTargets)
		ensureFirst(t, nf, true, "filter", "INPUT", jumpX)
		ensureFirst(t, nf, true, "filter", "OUTPUT", jumpY)
		ensureFirst(t, nf, true, "filter", "FORWARD", jumpX, jumpY)
		for chain, want := range map[string][]string{
			"INPUT":   {"-A INPUT" + strings.TrimPrefix(lineX, "-A FORWARD")},
			"OUTPUT":  {"-A OUTPUT" + strings.TrimPrefix(lineY, "-A FORWARD")},
			"FORWARD": {lineX, lineY},
		} {
			if diff := cmp.Diff(want, builtinRules(t, nf, "filter", chain)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", chain, diff)
			}
		}
	})

	t.Run("EnsureFirstRejectsBadRules", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, jumpTargets+"*filter\n"+foreignAccept+"\nCOMMIT\n")
		for name, rules := range map[string][][]string{
			"no comment":         {{"-j", "MINIK8S-TEST-X"}},
			"same key twice":     {jumpX, jumpX},
			"missing target":     {{"-m", "comment", "--comment", "test missing", "-j", "MINIK8S-TEST-MISSING"}},
			"missing after one":  {jumpX, {"-m", "comment", "--comment", "test missing", "-j", "MINIK8S-TEST-MISSING"}},
			"missing before one": {{"-m", "comment", "--comment", "test missing", "-j", "MINIK8S-TEST-MISSING"}, jumpX},
		} {
			if _, err := nf.EnsureFirst(t.Context(), "filter", "FORWARD", rules...); err == nil {
				t.Errorf("%s: EnsureFirst succeeded", name)
			}
			if diff := cmp.Diff([]string{foreignAccept}, builtinRules(t, nf, "filter", "FORWARD")); diff != "" {
				t.Errorf("%s: a failed EnsureFirst changed FORWARD (-want +got):\n%s", name, diff)
			}
		}
	})

	t.Run("ChainExists", func(t *testing.T) {
		nf := newTables(t)
		restore(t, nf, first)
		for _, tc := range []struct {
			table, chain string
			want         bool
		}{{"nat", "MINIK8S-TEST-A", true}, {"nat", "MINIK8S-TEST-F", false}, {"filter", "MINIK8S-TEST-F", true}, {"nat", "PREROUTING", true}} {
			got, err := nf.ChainExists(t.Context(), tc.table, tc.chain)
			if err != nil {
				t.Fatalf("ChainExists(%s, %s): %v", tc.table, tc.chain, err)
			}
			if got != tc.want {
				t.Errorf("ChainExists(%s, %s) = %v, want %v", tc.table, tc.chain, got, tc.want)
			}
		}
	})
}

// ensureFirst calls EnsureFirst and checks what it reports.
func ensureFirst(t *testing.T, nf netfilter.Interface, wantChanged bool, table, chain string, rules ...[]string) {
	t.Helper()
	changed, err := nf.EnsureFirst(t.Context(), table, chain, rules...)
	if err != nil {
		t.Fatalf("EnsureFirst %s/%s: %v", table, chain, err)
	}
	if changed != wantChanged {
		t.Errorf("EnsureFirst %s/%s changed = %v, want %v", table, chain, changed, wantChanged)
	}
}

func restore(t *testing.T, nf netfilter.Interface, payload string) {
	t.Helper()
	if err := nf.Restore(t.Context(), []byte(payload)); err != nil {
		t.Fatalf("restore: %v\n%s", err, payload)
	}
}

// Saved reads back kubeproxy's chains (MINIK8S-...) of the nat and filter tables.
func Saved(t testing.TB, nf netfilter.Interface) rules.State {
	t.Helper()
	var all []byte
	for _, table := range []string{rules.TableNAT, rules.TableFilter} {
		b, err := nf.Save(t.Context(), table)
		if err != nil {
			t.Fatalf("save %s: %v", table, err)
		}
		all = append(all, b...)
	}
	s, err := rules.ParseSave(all, rules.TableNAT, rules.TableFilter)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func saved(t *testing.T, nf netfilter.Interface) rules.State { return Saved(t, nf) }

// BuiltinRules returns the rules of a built-in chain, as iptables-save prints them.
func builtinRules(t *testing.T, nf netfilter.Interface, table, chain string) []string {
	t.Helper()
	b, err := nf.Save(t.Context(), table)
	if err != nil {
		t.Fatalf("save %s: %v", table, err)
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.HasPrefix(line, "-A "+chain+" ") {
			out = append(out, line)
		}
	}
	return out
}
