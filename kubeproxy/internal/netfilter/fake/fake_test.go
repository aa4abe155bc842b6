package fake

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/netfilter/netfiltertest"
)

func TestContract(t *testing.T) {
	netfiltertest.Run(t, func(*testing.T) netfilter.Interface { return New() })
}

func TestRecordsAndFails(t *testing.T) {
	f := New()
	boom := errors.New("boom")
	f.FailNext(OpRestore, boom)
	payload := []byte("*nat\n:MINIK8S-X - [0:0]\nCOMMIT\n")
	if err := f.Restore(t.Context(), payload); !errors.Is(err, boom) {
		t.Fatalf("first restore: %v, want boom", err)
	}
	if err := f.Restore(t.Context(), payload); err != nil {
		t.Fatal(err)
	}
	jump := []string{"-m", "comment", "--comment", "x", "-j", "MINIK8S-X"}
	if _, err := f.EnsureFirst(t.Context(), "nat", "OUTPUT", jump); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]byte{payload}, f.Restores()); diff != "" {
		t.Errorf("restores (-want +got):\n%s", diff)
	}
	want := []EnsureCall{{Table: "nat", Chain: "OUTPUT", Rules: [][]string{jump}, Changed: true}}
	if diff := cmp.Diff(want, f.Ensures()); diff != "" {
		t.Errorf("ensures (-want +got):\n%s", diff)
	}
}

func TestRuleLineSplitsBack(t *testing.T) {
	rule := []string{"-m", "comment", "--comment", `a "b" \c 'd'`, "-m", "comment", "--comment", "", "-j", "MINIK8S-X"}
	line := RuleLine("FORWARD", rule...)
	if want := `-A FORWARD -m comment --comment "a \"b\" \\c \'d\'" -m comment --comment "" -j MINIK8S-X`; line != want {
		t.Errorf("RuleLine = %s, want %s", line, want)
	}
	got, err := netfilter.SplitRule(line)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append([]string{"-A", "FORWARD"}, rule...), got); diff != "" {
		t.Errorf("split back (-want +got):\n%s", diff)
	}
}
