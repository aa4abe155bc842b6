package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubeproxy/internal/netfilter/iptables"
	"minik8s.io/shared/netns/netnstest"
)

// kernelTables is the real adapter in a fresh network namespace.
func kernelTables(t testing.TB) *iptables.Tables {
	t.Helper()
	netnstest.Need(t, "iptables", "iptables-restore", "iptables-save")
	tables, err := iptables.New(iptables.Config{NetNS: netnstest.New(t)})
	if err != nil {
		t.Fatalf("iptables adapter: %v", err)
	}
	return tables
}

// TestKernelTakesGoldenPayloads restores every golden payload with the real iptables-restore
// in a throwaway namespace and reads it back with iptables-save: the kernel accepts the rules
// and prints them exactly as written, which is what lets a restarted kubeproxy compare the
// kernel's chains with its own and write only the difference.
func TestKernelTakesGoldenPayloads(t *testing.T) {
	cases := append([]goldenCase(nil), goldenCases...)
	// Random balancing over three endpoints: probabilities 1/3 and 1/2 print back as written.
	three := goldenCases[len(goldenCases)-1]
	three.name, three.opts = "random-three-endpoints", defaultOptions
	cases = append(cases, three)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nf := kernelTables(t)
			r := build(tc.services, tc.slices, tc.options())
			if err := nf.Restore(t.Context(), r.Payload(nil)); err != nil {
				t.Fatalf("restore: %v", err)
			}
			if diff := cmp.Diff(r.State(), saved(t, nf)); diff != "" {
				t.Errorf("iptables-save (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKernelPartialPayload applies a full payload, then the partial one of a one-endpoint
// change: the kernel ends up with exactly the new ruleset, stale chain gone.
func TestKernelPartialPayload(t *testing.T) {
	nf := kernelTables(t)
	services, before, after := oneServiceChange()
	old := build(services, before, defaultOptions)
	cur := build(services, after, defaultOptions)
	if err := nf.Restore(t.Context(), old.Payload(nil)); err != nil {
		t.Fatalf("restore full: %v", err)
	}
	current := saved(t, nf)
	if err := nf.Restore(t.Context(), cur.Payload(current)); err != nil {
		t.Fatalf("restore partial: %v", err)
	}
	if diff := cmp.Diff(cur.State(), saved(t, nf)); diff != "" {
		t.Errorf("iptables-save after the partial payload (-want +got):\n%s", diff)
	}
}

// saved reads back the owned chains of nat and filter.
func saved(t testing.TB, nf *iptables.Tables) State {
	t.Helper()
	var all []byte
	for _, table := range []string{TableNAT, TableFilter} {
		b, err := nf.Save(t.Context(), table)
		if err != nil {
			t.Fatalf("save %s: %v", table, err)
		}
		all = append(all, b...)
	}
	s, err := ParseSave(all, TableNAT, TableFilter)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
