package fake

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"minik8s.io/kubeproxy/internal/netfilter"
)

// Op names a method in injected errors.
type Op string

const (
	OpRestore     Op = "Restore"
	OpSave        Op = "Save"
	OpEnsureFirst Op = "EnsureFirst"
	OpChainExists Op = "ChainExists"
)

// EnsureCall is one recorded EnsureFirst.
type EnsureCall struct {
	Table, Chain string
	Rules        [][]string
	Changed      bool
}

// builtins are the chains every table starts with, in iptables-save's order.
var builtins = map[string][]string{
	"filter": {"INPUT", "FORWARD", "OUTPUT"},
	"nat":    {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"},
	"mangle": {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"},
}

// targets a rule may jump to besides chains.
var targets = map[string]bool{
	"ACCEPT": true, "DROP": true, "RETURN": true, "REJECT": true, "DNAT": true, "SNAT": true,
	"MASQUERADE": true, "MARK": true, "LOG": true, "CONNMARK": true,
}

type table map[string][]string // chain -> rules ("-A <chain> ...")

// Tables is the fake. The zero value is not usable; call New.
type Tables struct {
	mu       sync.Mutex
	tables   map[string]table
	restores [][]byte
	ensures  []EnsureCall
	failures map[Op][]error
}

var _ netfilter.Interface = (*Tables)(nil)

// New returns a fake holding the built-in chains of filter, nat and mangle, all empty.
func New() *Tables {
	f := &Tables{tables: map[string]table{}, failures: map[Op][]error{}}
	for name, chains := range builtins {
		t := table{}
		for _, c := range chains {
			t[c] = nil
		}
		f.tables[name] = t
	}
	return f
}

// Reset empties every table, as a firewall reload that flushes everything does.
func (f *Tables) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, chains := range builtins {
		t := table{}
		for _, c := range chains {
			t[c] = nil
		}
		f.tables[name] = t
	}
}

// FailNext makes the next call of op return err (calls queue up).
func (f *Tables) FailNext(op Op, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[op] = append(f.failures[op], err)
}

func (f *Tables) failure(op Op) error {
	if q := f.failures[op]; len(q) > 0 {
		f.failures[op] = q[1:]
		return q[0]
	}
	return nil
}

// Restores returns every payload restored successfully, oldest first.
func (f *Tables) Restores() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.restores)
}

// Ensures returns every EnsureFirst call, oldest first.
func (f *Tables) Ensures() []EnsureCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ensures)
}

// Rules returns the rules of table/chain, nil when it does not exist.
func (f *Tables) Rules(table, chain string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tables[table][chain])
}

// Restore applies payload with iptables-restore --noflush semantics, all or nothing.
func (f *Tables) Restore(_ context.Context, payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failure(OpRestore); err != nil {
		return err
	}
	next := make(map[string]table, len(f.tables))
	for name, t := range f.tables {
		c := make(table, len(t))
		for k, v := range t {
			c[k] = slices.Clone(v)
		}
		next[name] = c
	}
	if err := apply(next, payload); err != nil {
		return fmt.Errorf("fake iptables-restore: %w", err)
	}
	f.tables = next
	f.restores = append(f.restores, slices.Clone(payload))
	return nil
}

func apply(tables map[string]table, payload []byte) error {
	var cur table
	var curName string
	sc := bufio.NewScanner(bytes.NewReader(payload))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		fail := func(format string, args ...any) error {
			return fmt.Errorf("line %d (%q): %s", n, line, fmt.Sprintf(format, args...))
		}
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "*"):
			if cur != nil {
				return fail("table %s not committed", curName)
			}
			curName = line[1:]
			if tables[curName] == nil {
				return fail("no table %s", curName)
			}
			cur = tables[curName]
		case line == "COMMIT":
			if cur == nil {
				return fail("COMMIT outside a table")
			}
			cur, curName = nil, ""
		case cur == nil:
			return fail("outside a table")
		case strings.HasPrefix(line, ":"):
			name, _, _ := strings.Cut(line[1:], " ")
			if slices.Contains(builtins[curName], name) {
				continue // a policy; the fake keeps none
			}
			cur[name] = nil // creates or flushes
		case strings.HasPrefix(line, "-A "), strings.HasPrefix(line, "-I "):
			fields := strings.Fields(line)
			if len(fields) < 2 {
				return fail("no chain")
			}
			chain := fields[1]
			if _, ok := cur[chain]; !ok {
				return fail("no chain %s", chain)
			}
			if j := jumpTarget(fields); j != "" && !targets[j] {
				if _, ok := cur[j]; !ok {
					return fail("no chain/target %s", j)
				}
			}
			rule := "-A" + line[2:]
			if line[1] == 'I' {
				cur[chain] = append([]string{rule}, cur[chain]...)
			} else {
				cur[chain] = append(cur[chain], rule)
			}
		case strings.HasPrefix(line, "-X "):
			name := strings.TrimSpace(line[3:])
			if _, ok := cur[name]; !ok || slices.Contains(builtins[curName], name) {
				return fail("cannot delete chain %s", name)
			}
			for c, rules := range cur {
				for _, r := range rules {
					if c != name && jumpTarget(strings.Fields(r)) == name {
						return fail("chain %s is still referenced by %s", name, c)
					}
				}
			}
			delete(cur, name)
		case strings.HasPrefix(line, "-F "):
			name := strings.TrimSpace(line[3:])
			if _, ok := cur[name]; !ok {
				return fail("no chain %s", name)
			}
			cur[name] = nil
		default:
			return fail("unknown command")
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if cur != nil {
		return fmt.Errorf("table %s not committed", curName)
	}
	return nil
}

func jumpTarget(fields []string) string {
	for i := 0; i+1 < len(fields); i++ {
		if fields[i] == "-j" || fields[i] == "-g" {
			return fields[i+1]
		}
	}
	return ""
}

// Save prints table as iptables-save does: built-in chains, then the others sorted, then the
// rules chain by chain in the same order.
func (f *Tables) Save(_ context.Context, name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failure(OpSave); err != nil {
		return nil, err
	}
	t := f.tables[name]
	if t == nil {
		return nil, fmt.Errorf("fake iptables-save: no table %s", name)
	}
	order := slices.Clone(builtins[name])
	var user []string
	for c := range t {
		if !slices.Contains(order, c) {
			user = append(user, c)
		}
	}
	slices.Sort(user)
	var b bytes.Buffer
	b.WriteString("*" + name + "\n")
	for _, c := range order {
		b.WriteString(":" + c + " ACCEPT [0:0]\n")
	}
	for _, c := range user {
		b.WriteString(":" + c + " - [0:0]\n")
	}
	for _, c := range append(order, user...) {
		for _, r := range t[c] {
			b.WriteString(r + "\n")
		}
	}
	b.WriteString("COMMIT\n")
	return b.Bytes(), nil
}

// EnsureFirst puts rules at the top of the chain, in order, and removes every other rule with
// the comment and target of one of them, as the iptables adapter does (in one step here).
func (f *Tables) EnsureFirst(_ context.Context, tableName, chain string, rules ...[]string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failure(OpEnsureFirst); err != nil {
		return false, err
	}
	t := f.tables[tableName]
	if t == nil {
		return false, fmt.Errorf("fake iptables: no table %s", tableName)
	}
	if _, ok := t[chain]; !ok {
		return false, fmt.Errorf("fake iptables: no chain %s/%s", tableName, chain)
	}
	keys, err := netfilter.Keys(rules)
	if err != nil {
		return false, fmt.Errorf("fake iptables: %s/%s: %w", tableName, chain, err)
	}
	lines := make([]string, len(rules))
	for i, r := range rules {
		lines[i] = RuleLine(chain, r...)
		if j := jumpTarget(strings.Fields(lines[i])); j != "" && !targets[j] {
			if _, ok := t[j]; !ok {
				return false, fmt.Errorf("fake iptables: no chain/target %s", j)
			}
		}
	}
	have := make([][]string, len(t[chain]))
	for i, line := range t[chain] {
		if have[i], err = netfilter.SplitRule(line); err != nil {
			return false, fmt.Errorf("fake iptables: %w", err)
		}
	}
	first, stale := netfilter.Placement(have, keys)
	changed := !first || len(stale) > 0
	if changed {
		next := lines
		for i, line := range t[chain] {
			if k, ok := netfilter.KeyOf(have[i]); !ok || !slices.Contains(keys, k) {
				next = append(next, line)
			}
		}
		t[chain] = next
	}
	call := EnsureCall{Table: tableName, Chain: chain, Rules: make([][]string, len(rules)), Changed: changed}
	for i, r := range rules {
		call.Rules[i] = slices.Clone(r)
	}
	f.ensures = append(f.ensures, call)
	return changed, nil
}

// ChainExists reports whether the table has the chain.
func (f *Tables) ChainExists(_ context.Context, tableName, chain string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failure(OpChainExists); err != nil {
		return false, err
	}
	t := f.tables[tableName]
	if t == nil {
		return false, errors.New("fake iptables: no table " + tableName)
	}
	_, ok := t[chain]
	return ok, nil
}

// RuleLine renders rule arguments as iptables-save prints them: "-A <chain> <args>", an
// argument with spaces or quotes in double quotes, its quotes and backslashes escaped.
func RuleLine(chain string, rule ...string) string {
	parts := make([]string, 0, len(rule)+2)
	parts = append(parts, "-A", chain)
	for _, a := range rule {
		if a == "" || strings.ContainsAny(a, " \t\"'\\") {
			a = `"` + quoteEscaper.Replace(a) + `"`
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// quoteEscaper escapes what iptables escapes inside a quoted argument.
var quoteEscaper = strings.NewReplacer(`"`, `\"`, `\`, `\\`, `'`, `\'`)
