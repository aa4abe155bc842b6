package nodenet

import (
	"errors"
	"fmt"
)

// IPTables is the part of github.com/coreos/go-iptables the rules need; *iptables.IPTables
// satisfies it, and package fake has one in memory that records what is done.
type IPTables interface {
	ChainExists(table, chain string) (bool, error)
	// NewChain fails when the chain exists.
	NewChain(table, chain string) error
	// List returns the chain as `iptables -S` prints it: "-P CHAIN POLICY" for a built-in
	// chain or "-N CHAIN" for ours, then one "-A CHAIN ..." line per rule, in order.
	List(table, chain string) ([]string, error)
	// Insert puts a rule at pos (1-based); a position past the end+1 fails.
	Insert(table, chain string, pos int, rulespec ...string) error
	Append(table, chain string, rulespec ...string) error
	// DeleteById removes rule number id (1-based); a number with no rule fails.
	DeleteById(table, chain string, id int) error
}

// ApplyRules makes the rule set true: our chains exist and hold exactly their rules (extra
// and duplicate rules deleted, missing ones appended, present ones untouched), and each jump
// is in its built-in chain once. It changes nothing when all is in place, so it runs at every
// start and periodically. It reports whether it changed anything.
func ApplyRules(ipt IPTables, rs RuleSet) (bool, error) {
	changed := false
	var errs []error
	for _, c := range rs.Chains {
		ch, err := applyChain(ipt, c)
		changed = changed || ch
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, j := range rs.Jumps {
		ch, err := applyJump(ipt, j)
		changed = changed || ch
		if err != nil {
			errs = append(errs, err)
		}
	}
	return changed, errors.Join(errs...)
}

// applyJump keeps exactly one copy of a jump in its built-in chain: two kubelets sharing a
// network namespace that start together may both have added it.
func applyJump(ipt IPTables, j Jump) (bool, error) {
	listed, err := ipt.List(j.Table, j.From)
	if err != nil {
		return false, fmt.Errorf("iptables %s %s: %w", j.Table, j.From, err)
	}
	want := ruleKey(j.Rule)
	var found []int
	num := 0
	for _, line := range listed {
		words := splitWords(line)
		if len(words) < 2 || words[0] != "-A" {
			continue
		}
		num++
		if ruleKey(words[2:]) == want {
			found = append(found, num)
		}
	}
	if len(found) == 0 {
		if j.Insert {
			err = ipt.Insert(j.Table, j.From, 1, j.Rule...)
		} else {
			err = ipt.Append(j.Table, j.From, j.Rule...)
		}
		if err != nil {
			return false, fmt.Errorf("iptables %s %s: jump: %w", j.Table, j.From, err)
		}
		return true, nil
	}
	for i := len(found) - 1; i >= 1; i-- {
		if err := ipt.DeleteById(j.Table, j.From, found[i]); err != nil {
			return true, fmt.Errorf("iptables %s %s: duplicate jump %d: %w", j.Table, j.From, found[i], err)
		}
	}
	return len(found) > 1, nil
}

func applyChain(ipt IPTables, c Chain) (bool, error) {
	exists, err := ipt.ChainExists(c.Table, c.Name)
	if err != nil {
		return false, fmt.Errorf("iptables %s %s: %w", c.Table, c.Name, err)
	}
	changed := false
	if !exists {
		if err := ipt.NewChain(c.Table, c.Name); err != nil {
			return false, fmt.Errorf("iptables %s: create %s: %w", c.Table, c.Name, err)
		}
		changed = true
	}
	listed, err := ipt.List(c.Table, c.Name)
	if err != nil {
		return changed, fmt.Errorf("iptables %s %s: %w", c.Table, c.Name, err)
	}
	plan := PlanChain(listed, c.Rules)
	// Append first, then delete: a changed rule is never missing in between.
	for _, r := range plan.Append {
		if err := ipt.Append(c.Table, c.Name, r...); err != nil {
			return true, fmt.Errorf("iptables %s %s: append: %w", c.Table, c.Name, err)
		}
		changed = true
	}
	for _, n := range plan.Delete {
		if err := ipt.DeleteById(c.Table, c.Name, n); err != nil {
			return true, fmt.Errorf("iptables %s %s: delete rule %d: %w", c.Table, c.Name, n, err)
		}
		changed = true
	}
	return changed, nil
}
