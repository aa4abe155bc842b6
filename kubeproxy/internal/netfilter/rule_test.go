package netfilter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
	}{
		{`-A FORWARD -m comment --comment simple -j ACCEPT`,
			[]string{"-A", "FORWARD", "-m", "comment", "--comment", "simple", "-j", "ACCEPT"}},
		{`-A FORWARD -m conntrack --ctstate NEW -m comment --comment "minik8s service portals" -j MINIK8S-SERVICES`,
			[]string{"-A", "FORWARD", "-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "minik8s service portals", "-j", "MINIK8S-SERVICES"}},
		// As iptables 1.8 prints the comment a"b\c 'd.
		{`-A FORWARD -m comment --comment "a\"b\\c \'d" -j ACCEPT`,
			[]string{"-A", "FORWARD", "-m", "comment", "--comment", `a"b\c 'd`, "-j", "ACCEPT"}},
		{`-A FORWARD -m comment --comment "" -j ACCEPT`,
			[]string{"-A", "FORWARD", "-m", "comment", "--comment", "", "-j", "ACCEPT"}},
		{"  -A  X\t-j  RETURN ", []string{"-A", "X", "-j", "RETURN"}},
	} {
		got, err := SplitRule(tc.line)
		if err != nil {
			t.Errorf("SplitRule(%s): %v", tc.line, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("SplitRule(%s) (-want +got):\n%s", tc.line, diff)
		}
	}
	if _, err := SplitRule(`-A X --comment "open -j Y`); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}

func TestKeys(t *testing.T) {
	a := []string{"-m", "comment", "--comment", "a", "-j", "MINIK8S-A"}
	b := []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "a", "-j", "MINIK8S-B"}
	got, err := Keys([][]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Key{{"a", "MINIK8S-A"}, {"a", "MINIK8S-B"}}, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	for name, rules := range map[string][][]string{
		"no comment": {{"-j", "MINIK8S-A"}},
		"no target":  {{"-m", "comment", "--comment", "a"}},
		"duplicate":  {a, append([]string{"-i", "eth0"}, a...)},
	} {
		if _, err := Keys(rules); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestPlacement(t *testing.T) {
	ours := func(c string) []string {
		return []string{"-A", "FORWARD", "-m", "comment", "--comment", c, "-j", "MINIK8S-" + c}
	}
	foreign := []string{"-A", "FORWARD", "-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"}
	plain := []string{"-A", "FORWARD", "-s", "10.0.0.0/8", "-j", "ACCEPT"}
	want := []Key{{"x", "MINIK8S-x"}, {"y", "MINIK8S-y"}}
	for _, tc := range []struct {
		name      string
		chain     [][]string
		wantFirst bool
		wantStale []int
	}{
		{"empty", nil, false, nil},
		{"in place", [][]string{ours("x"), ours("y"), foreign, plain}, true, nil},
		{"in place, nothing else", [][]string{ours("x"), ours("y")}, true, nil},
		{"foreign on top", [][]string{foreign, ours("x"), ours("y")}, false, nil},
		{"swapped", [][]string{ours("y"), ours("x")}, false, nil},
		{"one missing", [][]string{ours("x"), plain}, false, nil},
		{"duplicates below", [][]string{ours("x"), ours("y"), plain, ours("x"), ours("y")}, true, []int{4, 5}},
		{"fresh copies above old ones", [][]string{ours("x"), ours("y"), foreign, ours("y"), plain, ours("x")}, true, []int{4, 6}},
		{"someone else's comment", [][]string{ours("x"), {"-A", "FORWARD", "-m", "comment", "--comment", "y", "-j", "ACCEPT"}}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, stale := Placement(tc.chain, want)
			if first != tc.wantFirst {
				t.Errorf("first = %v, want %v", first, tc.wantFirst)
			}
			if diff := cmp.Diff(tc.wantStale, stale); diff != "" {
				t.Errorf("stale (-want +got):\n%s", diff)
			}
		})
	}
}
