package fake

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"minik8s.io/kubelet/internal/network/nodenet"
)

// IPTables is nodenet.IPTables in memory: tables of chains of rules, listed as `iptables -S`
// lists them, with every change recorded. Rules are kept and listed as given, so a rule
// written in the order iptables prints its parts (addresses, then matches, then the target)
// lists exactly as the real one does.
type IPTables struct {
	mu      sync.Mutex
	chains  map[string][][]string // "table/chain" -> rules
	builtin map[string]bool
	calls   []string
}

var _ nodenet.IPTables = (*IPTables)(nil)

// NewIPTables returns the tables of a fresh network namespace: the built-in chains of filter
// and nat, empty, with policy ACCEPT.
func NewIPTables() *IPTables {
	f := &IPTables{chains: map[string][][]string{}, builtin: map[string]bool{}}
	for _, c := range []string{"filter/INPUT", "filter/FORWARD", "filter/OUTPUT", "nat/PREROUTING", "nat/INPUT", "nat/OUTPUT", "nat/POSTROUTING"} {
		f.chains[c] = nil
		f.builtin[c] = true
	}
	return f
}

// Calls returns the changes made so far, as iptables arguments (reads are not recorded), and
// forgets them.
func (f *IPTables) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// Rules returns a chain's rules, each joined by spaces.
func (f *IPTables) Rules(table, chain string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.chains[table+"/"+chain] {
		out = append(out, strings.Join(r, " "))
	}
	return out
}

// chain returns the key of an existing chain; iptables' own message otherwise.
func (f *IPTables) chain(table, chain string) (string, error) {
	key := table + "/" + chain
	if _, ok := f.chains[key]; !ok {
		return "", fmt.Errorf("iptables: chain %s not found in table %s", chain, table)
	}
	return key, nil
}

func (f *IPTables) ChainExists(table, chain string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.chains[table+"/"+chain]
	return ok, nil
}

func (f *IPTables) NewChain(table, chain string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := table + "/" + chain
	if _, ok := f.chains[key]; ok {
		return fmt.Errorf("iptables: chain %s already exists", chain)
	}
	f.chains[key] = nil
	f.calls = append(f.calls, "-t "+table+" -N "+chain)
	return nil
}

// List quotes words with spaces in double quotes, as iptables -S does.
func (f *IPTables) List(table, chain string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return nil, err
	}
	out := []string{"-N " + chain}
	if f.builtin[key] {
		out = []string{"-P " + chain + " ACCEPT"}
	}
	for _, r := range f.chains[key] {
		words := make([]string, len(r))
		for i, w := range r {
			if strings.ContainsAny(w, " \t") {
				w = `"` + w + `"`
			}
			words[i] = w
		}
		out = append(out, "-A "+chain+" "+strings.Join(words, " "))
	}
	return out, nil
}

func (f *IPTables) Insert(table, chain string, pos int, rulespec ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return err
	}
	if pos < 1 || pos > len(f.chains[key])+1 {
		return fmt.Errorf("iptables: index of insertion %d too big", pos)
	}
	f.chains[key] = slices.Insert(f.chains[key], pos-1, slices.Clone(rulespec))
	f.calls = append(f.calls, fmt.Sprintf("-t %s -I %s %d %s", table, chain, pos, strings.Join(rulespec, " ")))
	return nil
}

func (f *IPTables) Append(table, chain string, rulespec ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return err
	}
	f.chains[key] = append(f.chains[key], slices.Clone(rulespec))
	f.calls = append(f.calls, fmt.Sprintf("-t %s -A %s %s", table, chain, strings.Join(rulespec, " ")))
	return nil
}

func (f *IPTables) DeleteById(table, chain string, id int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return err
	}
	if id < 1 || id > len(f.chains[key]) {
		return fmt.Errorf("iptables: index of deletion %d too big", id)
	}
	f.chains[key] = slices.Delete(f.chains[key], id-1, id)
	f.calls = append(f.calls, fmt.Sprintf("-t %s -D %s %d", table, chain, id))
	return nil
}
