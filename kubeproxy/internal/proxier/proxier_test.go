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
		{"first sync writes everything", ports("10.244.1.2", "10.244.2.3"), Result{Full: true, JumpsAdded: len(rules.Jumps())}, 1,
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
	if !res.Full || res.PayloadBytes != 0 || res.JumpsAdded != 0 || len(tables.Restores()) != 1 {
		t.Errorf("restart with nothing changed: %+v, %d restores; want a full read, no payload, no jump added, 1 restore", res, len(tables.Restores()))
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
	if err != nil || !res.Full || res.JumpsAdded != len(rules.Jumps()) {
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
