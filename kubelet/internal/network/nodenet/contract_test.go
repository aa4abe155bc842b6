package nodenet_test

import (
	"net/netip"
	"path/filepath"
	"testing"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/kubelet/internal/network/nodenet/nodenettest"
	"minik8s.io/shared/netns/netnstest"
)

// The contract suites against the real kernel and iptables, each case in a scratch network
// namespace made and deleted for it: the host's routes, links and rules are never touched.

func TestIntegrationKernelContract(t *testing.T) {
	needRoot(t)
	nodenettest.RunKernel(t, func(t *testing.T) nodenettest.KernelEnv {
		ns := netnstest.New(t)
		name := filepath.Base(ns)
		// The node's one interface holds its address and subnet. A veth pair, both ends in
		// the namespace, since kernels in containers may lack the dummy link type.
		addr := netip.MustParsePrefix("198.18.0.1/24")
		run(t, "ip", "-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "wire0")
		run(t, "ip", "-n", name, "addr", "add", addr.String(), "dev", "eth0")
		run(t, "ip", "-n", name, "link", "set", "wire0", "up")
		run(t, "ip", "-n", name, "link", "set", "eth0", "up")
		k, err := nodenet.NewNetlink(ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Close)
		return nodenettest.KernelEnv{Kernel: k, Addr: addr}
	})
}

func TestIntegrationIPTablesContract(t *testing.T) {
	needRoot(t)
	nodenettest.RunIPTables(t, func(t *testing.T) nodenet.IPTables {
		return newNSIPTables(t, netnstest.New(t))
	})
}
