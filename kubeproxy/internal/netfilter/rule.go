package netfilter

import (
	"errors"
	"fmt"
	"strings"
)

// Key identifies a rule that EnsureFirst keeps: its comment and its target. The rest of the
// rule is not compared because iptables prints matches in a canonical form of its own, which
// need not be the way they were written; a jump whose matches change needs a new comment.
type Key struct{ Comment, Target string }

func (k Key) String() string { return fmt.Sprintf("%q -j %s", k.Comment, k.Target) }

// KeyOf returns the key of a rule given as arguments ("-m", "comment", "--comment", "x",
// "-j", "T"); ok is false when it has no comment or no target.
func KeyOf(args []string) (k Key, ok bool) {
	var hasComment, hasTarget bool
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--comment":
			k.Comment, hasComment = args[i+1], true
		case "-j", "--jump", "-g", "--goto":
			k.Target, hasTarget = args[i+1], true
		}
	}
	return k, hasComment && hasTarget
}

// Keys returns the keys of rules, which EnsureFirst takes: each rule needs one and no two
// may share it.
func Keys(rules [][]string) ([]Key, error) {
	keys := make([]Key, len(rules))
	seen := make(map[Key]bool, len(rules))
	for i, r := range rules {
		k, ok := KeyOf(r)
		if !ok {
			return nil, fmt.Errorf("rule %q needs a --comment and a -j target", strings.Join(r, " "))
		}
		if seen[k] {
			return nil, fmt.Errorf("two rules share comment and target %s", k)
		}
		seen[k] = true
		keys[i] = k
	}
	return keys, nil
}

// SplitRule splits a rule as iptables -S and iptables-save print it ("-A FORWARD -m comment
// --comment "a b" -j X") into its arguments, undoing the double quotes and backslashes that
// iptables puts around an argument with spaces or quotes in it.
func SplitRule(line string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inArg   bool
		quoted  bool
		escaped bool
	)
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quoted && r == '\\':
			escaped = true
		case quoted && r == '"':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '"':
			quoted, inArg = true, true
		case r == ' ' || r == '\t':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quoted || escaped {
		return nil, errors.New("unterminated quote in rule " + line)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// Placement compares the rules of a chain (top first, each as arguments) with the keys of
// the rules that should begin it. first says whether the chain begins with them, in order;
// stale lists the 1-based positions, ascending, of the rules that carry one of the keys but
// are not its first occurrence in the chain. The chain is as EnsureFirst leaves it when first
// is true and stale is empty. After inserting fresh copies at the top, stale is exactly the
// old copies, which are safe to delete: a key's first occurrence is never stale.
func Placement(chain [][]string, want []Key) (first bool, stale []int) {
	wanted := make(map[Key]bool, len(want))
	for _, k := range want {
		wanted[k] = true
	}
	first = len(chain) >= len(want)
	seen := make(map[Key]bool, len(want))
	for i, args := range chain {
		k, ok := KeyOf(args)
		if i < len(want) && (!ok || k != want[i]) {
			first = false
		}
		if !ok || !wanted[k] {
			continue
		}
		if seen[k] {
			stale = append(stale, i+1)
		}
		seen[k] = true
	}
	return first, stale
}
