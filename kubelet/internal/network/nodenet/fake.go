package nodenet

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// FakeKernel is Kernel in memory, for tests. It holds only what the reconciler owns (routes
// marked RouteProtocol, the VXLAN device and its entries) and records every change.
type FakeKernel struct {
	mu      sync.Mutex
	routes  map[netip.Prefix]Route
	vtep    *VTEP
	neigh   map[netip.Addr]string
	fdb     map[FDB]bool
	changes []string
	// FailRoute makes ReplaceRoute fail for this destination, as the kernel does for a
	// gateway it cannot reach.
	FailRoute netip.Prefix
}

var _ Kernel = (*FakeKernel)(nil)

// NewFakeKernel returns an empty fake.
func NewFakeKernel() *FakeKernel {
	return &FakeKernel{routes: map[netip.Prefix]Route{}, neigh: map[netip.Addr]string{}, fdb: map[FDB]bool{}}
}

// State is what the fake holds, sorted as Desired sorts a Plan.
func (k *FakeKernel) State() Plan {
	k.mu.Lock()
	defer k.mu.Unlock()
	var p Plan
	for _, r := range k.routes {
		p.Routes = append(p.Routes, r)
	}
	if k.vtep != nil {
		v := *k.vtep
		p.VTEP = &v
	}
	for ip, mac := range k.neigh {
		p.Neighbors = append(p.Neighbors, Neighbor{IP: ip, MAC: mac})
	}
	for f := range k.fdb {
		p.FDB = append(p.FDB, f)
	}
	p.sort()
	return p
}

// Changes returns the changes made so far and forgets them.
func (k *FakeKernel) Changes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.changes
	k.changes = nil
	return c
}

// AddForeignRoute stores a route as if someone else (a manual `ip route`, a previous run)
// had made it with our protocol.
func (k *FakeKernel) AddForeignRoute(r Route) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.routes[r.Dst] = r
}

func (k *FakeKernel) record(format string, args ...any) {
	k.changes = append(k.changes, fmt.Sprintf(format, args...))
}

func (k *FakeKernel) Routes() ([]Route, error) {
	return k.State().Routes, nil
}

func (k *FakeKernel) ReplaceRoute(r Route) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.Dst == k.FailRoute {
		return fmt.Errorf("route %s: network is unreachable", r)
	}
	if r.Dev != "" && (k.vtep == nil || k.vtep.Name != r.Dev) {
		return fmt.Errorf("route %s: no device %s", r, r.Dev)
	}
	k.routes[r.Dst] = r
	k.record("replace route %s", r)
	return nil
}

func (k *FakeKernel) DeleteRoute(r Route) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.routes[r.Dst]; ok {
		delete(k.routes, r.Dst)
		k.record("delete route %s", r)
	}
	return nil
}

func (k *FakeKernel) EnsureVTEP(v VTEP) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.vtep != nil && *k.vtep == v {
		return nil
	}
	if k.vtep != nil && (k.vtep.Name != v.Name || k.vtep.VNI != v.VNI || k.vtep.Port != v.Port || k.vtep.Local != v.Local) {
		k.dropVTEPLocked()
	}
	k.vtep = &v
	k.record("vtep %s vni %d port %d local %s mac %s address %s", v.Name, v.VNI, v.Port, v.Local, v.MAC, v.Address)
	return nil
}

func (k *FakeKernel) dropVTEPLocked() {
	name := k.vtep.Name
	k.vtep = nil
	k.neigh, k.fdb = map[netip.Addr]string{}, map[FDB]bool{}
	for dst, r := range k.routes {
		if r.Dev == name {
			delete(k.routes, dst)
		}
	}
	k.record("delete vtep %s", name)
}

func (k *FakeKernel) DeleteVTEP(name string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.vtep != nil && k.vtep.Name == name {
		k.dropVTEPLocked()
	}
	return nil
}

func (k *FakeKernel) VTEPEntries(dev string) ([]Neighbor, []FDB, error) {
	s := k.State()
	if s.VTEP == nil || s.VTEP.Name != dev {
		return nil, nil, nil
	}
	return s.Neighbors, s.FDB, nil
}

func (k *FakeKernel) device(dev string) error {
	if k.vtep == nil || k.vtep.Name != dev {
		return fmt.Errorf("no device %s", dev)
	}
	return nil
}

func (k *FakeKernel) SetNeighbor(dev string, n Neighbor) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.device(dev); err != nil {
		return err
	}
	k.neigh[n.IP] = n.MAC
	k.record("neighbour %s %s", n.IP, n.MAC)
	return nil
}

func (k *FakeKernel) DeleteNeighbor(dev string, n Neighbor) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.neigh, n.IP)
	k.record("delete neighbour %s", n.IP)
	return nil
}

func (k *FakeKernel) SetFDB(dev string, f FDB) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if err := k.device(dev); err != nil {
		return err
	}
	k.fdb[f] = true
	k.record("fdb %s dst %s", f.MAC, f.Dst)
	return nil
}

func (k *FakeKernel) DeleteFDB(dev string, f FDB) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.fdb, f)
	k.record("delete fdb %s dst %s", f.MAC, f.Dst)
	return nil
}

// FakeIPTables is IPTables in memory: tables of chains of rules, listed as `iptables -S` lists
// them, with every change recorded.
type FakeIPTables struct {
	mu      sync.Mutex
	chains  map[string][][]string // "table/chain" -> rules
	calls   []string
	builtin map[string]bool
}

var _ IPTables = (*FakeIPTables)(nil)

// NewFakeIPTables returns the tables of a fresh network namespace: built-in chains, empty.
func NewFakeIPTables() *FakeIPTables {
	f := &FakeIPTables{chains: map[string][][]string{}, builtin: map[string]bool{}}
	for _, c := range []string{"filter/INPUT", "filter/FORWARD", "filter/OUTPUT", "nat/PREROUTING", "nat/INPUT", "nat/OUTPUT", "nat/POSTROUTING"} {
		f.chains[c] = nil
		f.builtin[c] = true
	}
	return f
}

// Calls returns the changes made so far (reads are not recorded) and forgets them.
func (f *FakeIPTables) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

// Rules returns a chain's rules, each joined by spaces.
func (f *FakeIPTables) Rules(table, chain string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.chains[table+"/"+chain] {
		out = append(out, strings.Join(r, " "))
	}
	return out
}

func (f *FakeIPTables) chain(table, chain string) (string, error) {
	key := table + "/" + chain
	if _, ok := f.chains[key]; !ok {
		return "", fmt.Errorf("iptables: chain %s not found in table %s", chain, table)
	}
	return key, nil
}

func (f *FakeIPTables) ChainExists(table, chain string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.chains[table+"/"+chain]
	return ok, nil
}

func (f *FakeIPTables) NewChain(table, chain string) error {
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
func (f *FakeIPTables) List(table, chain string) ([]string, error) {
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

func (f *FakeIPTables) Exists(table, chain string, rulespec ...string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return false, err
	}
	want := ruleKey(rulespec)
	return slices.ContainsFunc(f.chains[key], func(r []string) bool { return ruleKey(r) == want }), nil
}

func (f *FakeIPTables) Insert(table, chain string, pos int, rulespec ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return err
	}
	if pos < 1 || pos > len(f.chains[key])+1 {
		return fmt.Errorf("iptables: index %d out of range", pos)
	}
	f.chains[key] = slices.Insert(f.chains[key], pos-1, slices.Clone(rulespec))
	f.calls = append(f.calls, fmt.Sprintf("-t %s -I %s %d %s", table, chain, pos, strings.Join(rulespec, " ")))
	return nil
}

func (f *FakeIPTables) Append(table, chain string, rulespec ...string) error {
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

func (f *FakeIPTables) DeleteById(table, chain string, id int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key, err := f.chain(table, chain)
	if err != nil {
		return err
	}
	if id < 1 || id > len(f.chains[key]) {
		return fmt.Errorf("iptables: index %d out of range", id)
	}
	f.chains[key] = slices.Delete(f.chains[key], id-1, id)
	f.calls = append(f.calls, fmt.Sprintf("-t %s -D %s %d", table, chain, id))
	return nil
}
