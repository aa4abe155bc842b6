package proxier

import (
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubeproxy/internal/catalog"
	"minik8s.io/kubeproxy/internal/netfilter/fake"
	"minik8s.io/kubeproxy/internal/rules"
)

var opts = rules.Options{ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), Balance: rules.Random}

// jumpChains is the number of built-in chains that hold our jumps.
const jumpChains = 6

func ports(endpoints ...string) []catalog.ServicePort {
	p := catalog.ServicePort{Namespace: "default", Name: "web", PortName: "http", Protocol: corev1.ProtocolTCP,
		ClusterIP: netip.MustParseAddr("10.96.0.10"), Port: 80}
	for _, e := range endpoints {
		p.Endpoints = append(p.Endpoints, catalog.Endpoint{IP: netip.MustParseAddr(e), Port: 8080, Ready: true, Serving: true})
	}
	other := catalog.ServicePort{Namespace: "default", Name: "db", Protocol: corev1.ProtocolTCP,
		ClusterIP: netip.MustParseAddr("10.96.0.11"), Port: 5432,
		Endpoints: []catalog.Endpoint{{IP: netip.MustParseAddr("10.244.9.9"), Port: 5432, Ready: true}}}
	return []catalog.ServicePort{other, p}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newProxier(tables *fake.Tables, c *clock) *Proxier {
	return New(Config{Tables: tables, Options: opts, Now: c.now, Logger: slog.New(slog.DiscardHandler)})
}

func TestSyncWritesOnlyWhatChanged(t *testing.T) {
	tables := fake.New()
	c := &clock{t: time.Unix(1000, 0)}
	p := newProxier(tables, c)

	steps := []struct {
		name      string
		ports     []catalog.ServicePort
		want      Result
		restores  int
		mustWrite []string // chains the latest payload declares
	}{
		{"first sync writes everything", ports("10.244.1.2", "10.244.2.3"), Result{Full: true, JumpChainsFixed: jumpChains}, 1,
			[]string{rules.ChainServices, rules.ChainPostrouting, rules.ChainForward}},
		{"nothing changed, nothing restored", ports("10.244.1.2", "10.244.2.3"), Result{}, 1, nil},
		{"one endpoint moved", ports("10.244.1.2", "10.244.3.4"), Result{}, 2, nil},
	}
	for _, s := range steps {
		res, err := p.Sync(t.Context(), s.ports)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		res.PayloadBytes, res.Rules = 0, 0
		if diff := cmp.Diff(s.want, res); diff != "" {
			t.Errorf("%s: result (-want +got):\n%s", s.name, diff)
		}
		restores := tables.Restores()
		if len(restores) != s.restores {
			t.Fatalf("%s: %d restores, want %d", s.name, len(restores), s.restores)
		}
		last := string(restores[len(restores)-1])
		for _, c := range s.mustWrite {
			if !strings.Contains(last, ":"+c+" ") {
				t.Errorf("%s: payload does not write %s", s.name, c)
			}
		}
	}
	// The last payload touched web's chains only: db's service chain is not in it.
	last := string(tables.Restores()[1])
	db := rules.ServiceChain(ports()[0])
	if strings.Contains(last, db) || strings.Contains(last, rules.ChainServices+" ") {
		t.Errorf("the payload of one endpoint change names other chains:\n%s", last)
	}
	if diff := cmp.Diff(rules.Build(ports("10.244.1.2", "10.244.3.4"), opts).State(), kernel(t, tables)); diff != "" {
		t.Errorf("kernel chains (-want +got):\n%s", diff)
	}
}

// TestRestartRestoresNothing: a new proxier (a restarted kubeproxy) over a kernel that holds
// the rules already reads them back and restores nothing; with one change it restores only it.
func TestRestartRestoresNothing(t *testing.T) {
	tables := fake.New()
	c := &clock{t: time.Unix(1000, 0)}
	if _, err := newProxier(tables, c).Sync(t.Context(), ports("10.244.1.2", "10.244.2.3")); err != nil {
		t.Fatal(err)
	}
	res, err := newProxier(tables, c).Sync(t.Context(), ports("10.244.1.2", "10.244.2.3"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Full || res.PayloadBytes != 0 || res.JumpChainsFixed != 0 || len(tables.Restores()) != 1 {
		t.Errorf("restart with nothing changed: %+v, %d restores; want a full read, no payload, no jump moved, 1 restore", res, len(tables.Restores()))
	}
	res, err = newProxier(tables, c).Sync(t.Context(), ports("10.244.1.2"))
	if err != nil {
		t.Fatal(err)
	}
	payload := string(tables.Restores()[1])
	if !res.Full || strings.Contains(payload, rules.ChainPostrouting) || !strings.Contains(payload, "-X "+rules.EndpointChain(ports()[1], catalog.Endpoint{IP: netip.MustParseAddr("10.244.2.3"), Port: 8080})) {
		t.Errorf("restart with one endpoint gone wrote:\n%s", payload)
	}
}

func TestFailedRestoreReadsBackNextTime(t *testing.T) {
	tables := fake.New()
	c := &clock{t: time.Unix(1000, 0)}
	p := newProxier(tables, c)
	if _, err := p.Sync(t.Context(), ports("10.244.1.2")); err != nil {
		t.Fatal(err)
	}
	tables.FailNext(fake.OpRestore, errors.New("boom"))
	if _, err := p.Sync(t.Context(), ports("10.244.1.3")); err == nil {
		t.Fatal("sync succeeded although the restore failed")
	}
	res, err := p.Sync(t.Context(), ports("10.244.1.3"))
	if err != nil || !res.Full {
		t.Fatalf("sync after a failure: %+v, %v; want a full sync", res, err)
	}
	if diff := cmp.Diff(rules.Build(ports("10.244.1.3"), opts).State(), kernel(t, tables)); diff != "" {
		t.Errorf("kernel chains (-want +got):\n%s", diff)
	}
}

func TestCheckNoticesAFlush(t *testing.T) {
	tables := fake.New()
	c := &clock{t: time.Unix(1000, 0)}
	p := newProxier(tables, c)
	if _, err := p.Sync(t.Context(), ports("10.244.1.2")); err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Check(t.Context()); !ok || err != nil {
		t.Fatalf("check on intact tables: %v, %v", ok, err)
	}
	tables.Reset()
	if ok, err := p.Check(t.Context()); ok || err != nil {
		t.Fatalf("check after a flush: %v, %v; want false", ok, err)
	}
	res, err := p.Sync(t.Context(), ports("10.244.1.2"))
	if err != nil || !res.Full || res.JumpChainsFixed != jumpChains {
		t.Fatalf("sync after a flush: %+v, %v; want everything written again", res, err)
	}
	if got := tables.Rules("nat", "PREROUTING"); len(got) != 1 || !strings.HasSuffix(got[0], "-j "+rules.ChainServices) {
		t.Errorf("PREROUTING after repair: %q", got)
	}
}

func TestFullSyncPeriodReadsBack(t *testing.T) {
	tables := fake.New()
	c := &clock{t: time.Unix(1000, 0)}
	p := newProxier(tables, c)
	for i, want := range []bool{true, false, true} {
		res, err := p.Sync(t.Context(), ports("10.244.1.2"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Full != want {
			t.Errorf("sync %d: full = %v, want %v", i, res.Full, want)
		}
		c.t = c.t.Add(DefaultFullSyncPeriod / 2)
		if i == 1 {
			c.t = c.t.Add(DefaultFullSyncPeriod / 2)
		}
	}
}

func kernel(t *testing.T, tables *fake.Tables) rules.State {
	t.Helper()
	var all []byte
	for _, tb := range []string{rules.TableNAT, rules.TableFilter} {
		b, err := tables.Save(t.Context(), tb)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	s, err := rules.ParseSave(all, rules.TableNAT, rules.TableFilter)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestGroupJumps(t *testing.T) {
	r := func(c string) []string { return []string{"-m", "comment", "--comment", c, "-j", "MINIK8S-" + c} }
	got := groupJumps([]rules.Jump{
		{Table: "nat", Chain: "PREROUTING", Rule: r("a")},
		{Table: "filter", Chain: "FORWARD", Rule: r("b")},
		{Table: "filter", Chain: "INPUT", Rule: r("c")},
		{Table: "filter", Chain: "FORWARD", Rule: r("d")},
		{Table: "nat", Chain: "FORWARD", Rule: r("e")},
		{Table: "filter", Chain: "FORWARD", Rule: r("f")},
	})
	want := []jumpGroup{
		{"nat", "PREROUTING", [][]string{r("a")}},
		{"filter", "FORWARD", [][]string{r("b"), r("d"), r("f")}},
		{"filter", "INPUT", [][]string{r("c")}},
		{"nat", "FORWARD", [][]string{r("e")}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(jumpGroup{})); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if n := len(groupJumps(rules.Jumps())); n != jumpChains {
		t.Errorf("rules.Jumps() uses %d built-in chains, the tests here expect %d", n, jumpChains)
	}
}

// cniForward is what the CNI firewall plugin inserts at the top of FORWARD when the first pod
// starts, after kubeproxy has put its jumps there.
const cniForward = `-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD`

// insertCNIForward inserts cniForward at the top of filter FORWARD, with its chain accepting
// everything from the pod network.
func insertCNIForward(t *testing.T, tables *fake.Tables) {
	t.Helper()
	payload := "*filter\n:CNI-FORWARD - [0:0]\n-A CNI-FORWARD -s 10.244.0.0/16 -j ACCEPT\n-I" + strings.TrimPrefix(cniForward, "-A") + "\nCOMMIT\n"
	if err := tables.Restore(t.Context(), []byte(payload)); err != nil {
		t.Fatal(err)
	}
}

// ourJumps returns our jumps in table/chain as the fake holds them, in the order of
// rules.Jumps.
func ourJumps(table, chain string) []string {
	var out []string
	for _, j := range rules.Jumps() {
		if j.Table == table && j.Chain == chain {
			out = append(out, fake.RuleLine(chain, j.Rule...))
		}
	}
	return out
}

// TestCheckPutsJumpsFirstAgain: a rule inserted above our jumps in FORWARD after a sync (the
// CNI firewall plugin's ACCEPT of pod traffic) is moved below them by the next periodic
// Check, and a Check after that changes nothing.
func TestCheckPutsJumpsFirstAgain(t *testing.T) {
	tables := fake.New()
	c := &clock{t: time.Unix(1000, 0)}
	p := newProxier(tables, c)
	if _, err := p.Sync(t.Context(), ports()); err != nil {
		t.Fatal(err)
	}
	forward := ourJumps("filter", "FORWARD")
	if len(forward) != 3 {
		t.Fatalf("rules.Jumps() has %d FORWARD jumps, the test expects 3", len(forward))
	}
	if diff := cmp.Diff(forward, tables.Rules("filter", "FORWARD")); diff != "" {
		t.Fatalf("FORWARD after the first sync (-want +got):\n%s", diff)
	}
	insertCNIForward(t, tables)

	ensured := len(tables.Ensures())
	if ok, err := p.Check(t.Context()); !ok || err != nil {
		t.Fatalf("check: %v, %v", ok, err)
	}
	if diff := cmp.Diff(append(forward, cniForward), tables.Rules("filter", "FORWARD")); diff != "" {
		t.Errorf("FORWARD after the check (-want +got):\n%s", diff)
	}
	calls := tables.Ensures()[ensured:]
	if len(calls) != jumpChains {
		t.Fatalf("the check ensured %d chains, want %d (one call per built-in chain)", len(calls), jumpChains)
	}
	for _, call := range calls {
		if want := call.Table == "filter" && call.Chain == "FORWARD"; call.Changed != want {
			t.Errorf("check changed %s/%s = %v, want %v", call.Table, call.Chain, call.Changed, want)
		}
	}

	ensured = len(tables.Ensures())
	if ok, err := p.Check(t.Context()); !ok || err != nil {
		t.Fatalf("second check: %v, %v", ok, err)
	}
	for _, call := range tables.Ensures()[ensured:] {
		if call.Changed {
			t.Errorf("the second check changed %s/%s", call.Table, call.Chain)
		}
	}
}

// TestCheckAfterAFlushLeavesJumpsToSync: with our chains gone there is nothing to jump to, so
// Check only reports it; the next Sync writes chains and jumps.
func TestCheckAfterAFlushLeavesJumpsToSync(t *testing.T) {
	tables := fake.New()
	p := newProxier(tables, &clock{t: time.Unix(1000, 0)})
	if _, err := p.Sync(t.Context(), ports()); err != nil {
		t.Fatal(err)
	}
	tables.Reset()
	ensured := len(tables.Ensures())
	if ok, err := p.Check(t.Context()); ok || err != nil {
		t.Fatalf("check after a flush: %v, %v; want false", ok, err)
	}
	if n := len(tables.Ensures()) - ensured; n != 0 {
		t.Errorf("check after a flush ensured %d chains, want none", n)
	}
}

// TestFailedJumpCheckIsRetried: when one chain fails the others are still fixed, Check
// returns the error, and the next Sync tries the jumps again.
func TestFailedJumpCheckIsRetried(t *testing.T) {
	tables := fake.New()
	p := newProxier(tables, &clock{t: time.Unix(1000, 0)})
	if _, err := p.Sync(t.Context(), ports()); err != nil {
		t.Fatal(err)
	}
	insertCNIForward(t, tables)
	boom := errors.New("boom")
	tables.FailNext(fake.OpEnsureFirst, boom) // the first chain, nat PREROUTING
	if ok, err := p.Check(t.Context()); !ok || !errors.Is(err, boom) {
		t.Fatalf("check: %v, %v; want true, boom", ok, err)
	}
	if got := tables.Rules("filter", "FORWARD"); len(got) == 0 || got[0] == cniForward {
		t.Errorf("FORWARD after a check that failed on another chain: %q", got)
	}
	ensured := len(tables.Ensures())
	if _, err := p.Sync(t.Context(), ports()); err != nil {
		t.Fatal(err)
	}
	if n := len(tables.Ensures()) - ensured; n != jumpChains {
		t.Errorf("the sync after a failed check ensured %d chains, want %d", n, jumpChains)
	}
}
