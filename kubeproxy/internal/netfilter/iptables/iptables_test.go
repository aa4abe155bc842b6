package iptables

import (
	"testing"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/netfilter/netfiltertest"
	"minik8s.io/shared/netns/netnstest"
)

// newInNetNS returns the adapter working in a fresh network namespace.
func newInNetNS(t testing.TB) *Tables {
	t.Helper()
	netnstest.Need(t, "iptables", "iptables-restore", "iptables-save")
	ns := netnstest.New(t)
	tables, err := New(Config{NetNS: ns})
	if err != nil {
		t.Fatalf("iptables adapter: %v", err)
	}
	return tables
}

func TestContract(t *testing.T) {
	netfiltertest.Run(t, func(t *testing.T) netfilter.Interface { return newInNetNS(t) })
}
