package nodenet

import (
	"net/netip"
	"slices"
	"strings"
)

// The kubelet's iptables chains. They do not start with MINIK8S-: kubeproxy owns every chain
// that does, rewrites them with iptables-restore and deletes those it did not write.
const (
	// ForwardChain (filter) accepts traffic to and from the cluster CIDR, which Docker's
	// FORWARD policy DROP would otherwise drop once it crosses nodes.
	ForwardChain = "KUBELET-PODNET-FORWARD"
	// PostroutingChain (nat) masquerades pod traffic that leaves the cluster CIDR and leaves
	// pod-to-pod traffic alone.
	PostroutingChain = "KUBELET-PODNET-POSTROUTING"
)

// Chain is one of our chains with its rules in order, each a rulespec as go-iptables takes it.
type Chain struct {
	Table, Name string
	Rules       [][]string
}

// Jump is a rule in a built-in chain that sends traffic to one of ours. Insert puts it first
// (ahead of rules that might reject), otherwise it is appended.
type Jump struct {
	Table, From string
	Insert      bool
	Rule        []string
}

// RuleSet is every rule the pod network needs.
type RuleSet struct {
	Chains []Chain
	Jumps  []Jump
}

// multicast is never masqueraded.
const multicast = "224.0.0.0/4"

// Rules returns the rules for a cluster CIDR. They name the cluster CIDR only, not the node's
// pod CIDR: every node of a cluster has the same rules, so several kubelets sharing one network
// namespace (tests on one host) agree on them instead of removing each other's.
func Rules(clusterCIDR netip.Prefix) RuleSet {
	c := clusterCIDR.Masked().String()
	return RuleSet{
		Chains: []Chain{
			{Table: "filter", Name: ForwardChain, Rules: [][]string{
				{"-s", c, "-m", "comment", "--comment", "minik8s: forward from pods", "-j", "ACCEPT"},
				{"-d", c, "-m", "comment", "--comment", "minik8s: forward to pods", "-j", "ACCEPT"},
			}},
			{Table: "nat", Name: PostroutingChain, Rules: [][]string{
				{"-s", c, "-d", c, "-m", "comment", "--comment", "minik8s: no NAT between pods", "-j", "RETURN"},
				{"-s", c, "!", "-d", multicast, "-m", "comment", "--comment", "minik8s: masquerade pods leaving the cluster", "-j", "MASQUERADE"},
			}},
		},
		Jumps: []Jump{
			{Table: "filter", From: "FORWARD", Insert: true, Rule: []string{"-m", "comment", "--comment", "minik8s pod network", "-j", ForwardChain}},
			{Table: "nat", From: "POSTROUTING", Rule: []string{"-m", "comment", "--comment", "minik8s pod network", "-j", PostroutingChain}},
		},
	}
}

// ChainChanges are the steps that make a chain's listed rules the wanted ones.
type ChainChanges struct {
	// Delete holds rule numbers (1-based, as iptables -D takes them), highest first, so
	// deleting them in order never shifts one still to come.
	Delete []int
	// Append holds rules that are missing, in the wanted order.
	Append [][]string
}

// PlanChain compares a chain's rules as `iptables -S <chain>` lists them ("-N CHAIN" then
// "-A CHAIN ..." lines) with the wanted rulespecs. Rules are compared as multisets of words, so
// the order iptables prints matches and options in does not matter. Extra rules and duplicates
// are deleted, missing ones appended; rules already there stay where they are, so traffic is
// never without them.
func PlanChain(listed []string, want [][]string) ChainChanges {
	wanted := map[string]int{} // key -> index in want
	for i, r := range want {
		wanted[ruleKey(r)] = i
	}
	present := make([]bool, len(want))
	var ch ChainChanges
	num := 0
	for _, line := range listed {
		words := splitWords(line)
		if len(words) < 2 || words[0] != "-A" {
			continue
		}
		num++
		i, ok := wanted[ruleKey(words[2:])]
		if ok && !present[i] {
			present[i] = true
			continue
		}
		ch.Delete = append(ch.Delete, num)
	}
	slices.Reverse(ch.Delete)
	for i, r := range want {
		if !present[i] {
			ch.Append = append(ch.Append, r)
		}
	}
	return ch
}

func ruleKey(words []string) string {
	w := slices.Clone(words)
	slices.Sort(w)
	return strings.Join(w, "\x00")
}

// splitWords splits an iptables -S line as a shell would: iptables quotes arguments that hold
// spaces (comments) with double quotes and escapes quotes inside them with a backslash.
func splitWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			inWord = true
		case ch == '"':
			quoted = !quoted
			inWord = true
		case (ch == ' ' || ch == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
