package app

import (
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/coreos/go-iptables/iptables"

	"minik8s.io/kubelet/internal/network/nodenet"
)

// DefaultClusterCIDR is the pod network the apiserver hands node blocks out of by default.
const DefaultClusterCIDR = "10.244.0.0/16"

// podCIDRSource is what knows this node's pod CIDR once it is registered (nodestatus.Agent).
type podCIDRSource interface {
	PodCIDR() string
}

// newRoutes builds the reconciler of routes to the other nodes' pods and of the pod network's
// iptables rules. Without iptables the routes still work; pods then lack masquerade and may
// be dropped by a FORWARD policy, which the log says.
func newRoutes(cfg Config, node, hostIP string, agent podCIDRSource, nodes nodenet.Nodes, log *slog.Logger) (*nodenet.Reconciler, error) {
	mode, err := nodenet.ParseMode(cfg.NetworkMode)
	if err != nil {
		return nil, err
	}
	cluster, err := netip.ParsePrefix(cfg.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("--cluster-cidr: %w", err)
	}
	kernel, err := nodenet.NewNetlink("")
	if err != nil {
		return nil, err
	}
	var ipt nodenet.IPTables
	if t, err := iptables.New(iptables.Timeout(5)); err != nil {
		log.Error("iptables unavailable: pods get no masquerade and no FORWARD accept", "err", err)
	} else {
		ipt = t
	}
	var outside sync.Once
	self := func() nodenet.Peer {
		p := nodenet.Peer{Name: node}
		if c, err := netip.ParsePrefix(agent.PodCIDR()); err == nil {
			p.PodCIDR = c.Masked()
			if !cluster.Contains(p.PodCIDR.Addr()) {
				outside.Do(func() {
					log.Warn("the node's pod CIDR is outside --cluster-cidr: its pods are masqueraded towards other nodes", "podCIDR", p.PodCIDR.String(), "clusterCIDR", cluster.String())
				})
			}
		}
		if ip, err := netip.ParseAddr(hostIP); err == nil {
			p.InternalIP = ip
		}
		return p
	}
	return nodenet.NewReconciler(nodenet.ReconcilerConfig{Config: nodenet.Config{Mode: mode}, ClusterCIDR: cluster.Masked(), Logger: log},
		kernel, ipt, self, nodes)
}

// podMTU is the pods' MTU: the default (0, the plugin's) with host-gw; in VXLAN mode the node
// interface's less the encapsulation, so a full-size pod packet still fits once tunnelled.
func podMTU(cfg Config, hostIP string, log *slog.Logger) int {
	if cfg.NetworkMode != string(nodenet.VXLAN) {
		return 0
	}
	ip, err := netip.ParseAddr(hostIP)
	if err != nil {
		log.Warn("vxlan: no node address to size the pod MTU from", "nodeIP", hostIP)
		return 0
	}
	k, err := nodenet.NewNetlink("")
	if err != nil {
		log.Warn("vxlan: pod MTU", "err", err)
		return 0
	}
	defer k.Close()
	mtu, err := k.ParentMTU(ip)
	if err != nil {
		log.Warn("vxlan: pod MTU", "err", err)
		return 0
	}
	return mtu - nodenet.VXLANOverhead
}
