package fake_test

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/kubelet/internal/network/nodenet/fake"
	"minik8s.io/kubelet/internal/network/nodenet/nodenettest"
)

func TestKernelContract(t *testing.T) {
	nodenettest.RunKernel(t, func(t *testing.T) nodenettest.KernelEnv {
		addr := netip.MustParsePrefix("198.18.0.1/24")
		return nodenettest.KernelEnv{Kernel: fake.NewKernel(addr), Addr: addr}
	})
}

func TestIPTablesContract(t *testing.T) {
	nodenettest.RunIPTables(t, func(*testing.T) nodenet.IPTables { return fake.NewIPTables() })
}

// TestKernelRecords: what the fake adds beyond the contract, the record of changes that
// tests use to prove a sync did nothing.
func TestKernelRecords(t *testing.T) {
	k := fake.NewKernel(netip.MustParsePrefix("192.168.5.1/24"))
	r := nodenet.Route{Dst: netip.MustParsePrefix("10.244.1.0/24"), Gw: netip.MustParseAddr("192.168.5.2")}
	for range 2 {
		if err := k.ReplaceRoute(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.DeleteRoute(r); err != nil {
		t.Fatal(err)
	}
	if err := k.DeleteRoute(r); err != nil {
		t.Fatal(err)
	}
	want := []string{"replace route 10.244.1.0/24 via 192.168.5.2", "delete route 10.244.1.0/24 via 192.168.5.2"}
	if d := cmp.Diff(want, k.Changes()); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if c := k.Changes(); len(c) != 0 {
		t.Errorf("Changes did not forget: %q", c)
	}
	k.AddForeignRoute(r)
	if got := k.State().Routes; len(got) != 1 || len(k.Changes()) != 0 {
		t.Errorf("a foreign route: routes %v, and it must not count as our change", got)
	}
}

func TestIPTablesRecords(t *testing.T) {
	ipt := fake.NewIPTables()
	if err := ipt.NewChain("nat", "C"); err != nil {
		t.Fatal(err)
	}
	if err := ipt.Append("nat", "C", "-j", "RETURN"); err != nil {
		t.Fatal(err)
	}
	if err := ipt.Insert("nat", "C", 1, "-m", "comment", "--comment", "a b", "-j", "MASQUERADE"); err != nil {
		t.Fatal(err)
	}
	if _, err := ipt.List("nat", "C"); err != nil {
		t.Fatal(err)
	}
	if err := ipt.DeleteById("nat", "C", 2); err != nil {
		t.Fatal(err)
	}
	want := []string{"-t nat -N C", "-t nat -A C -j RETURN", "-t nat -I C 1 -m comment --comment a b -j MASQUERADE", "-t nat -D C 2"}
	if d := cmp.Diff(want, ipt.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"-m comment --comment a b -j MASQUERADE"}, ipt.Rules("nat", "C")); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
}
