package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/coreos/go-iptables/iptables"

	"minik8s.io/kubelet/internal/network"
	"minik8s.io/kubelet/internal/network/cninet"
	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/kubelet/internal/nodestatus"
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

// podNetwork is the pod network: it stands in for the CNI network until the node is registered
// with its pod CIDR, then configures it (Start).
type podNetwork struct {
	cfg Config
	log *slog.Logger
	// Set before Start: the node agent, the node's address, and what to wake once the network
	// is up (the VXLAN device takes the pod CIDR's first address).
	agent  *nodestatus.Agent
	hostIP string
	routes func()

	mu  sync.Mutex
	net network.Network
}

func (p *podNetwork) get() network.Network {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.net
}

func (p *podNetwork) ready() bool { return p.get() != nil }

// Start waits for the node's registration and configures CNI on its pod CIDR.
func (p *podNetwork) Start(ctx context.Context) error {
	select {
	case <-p.agent.Registered():
	case <-ctx.Done():
		return nil
	}
	n, err := cninet.New(cninet.Config{PodCIDR: p.agent.PodCIDR(), RootDir: p.cfg.RootDir, BridgeName: p.cfg.BridgeName,
		PluginDirs: p.cfg.CNIBinDirs, MTU: podMTU(p.cfg, p.hostIP, p.log)}, p.log)
	if err == nil {
		err = n.Prepare(ctx)
	}
	if err != nil {
		// The node stays NotReady, saying why; the kubelet goes on serving what it can.
		p.log.Error("configuring the pod network", "podCIDR", p.agent.PodCIDR(), "err", err)
		<-ctx.Done()
		return nil
	}
	p.mu.Lock()
	p.net = n
	p.mu.Unlock()
	p.routes()
	p.log.Info("pod network ready", "podCIDR", p.agent.PodCIDR())
	<-ctx.Done()
	return nil
}

var errNoPodNetwork = errors.New("the pod network is not configured yet: the node has no pod CIDR")

func (p *podNetwork) SetUp(ctx context.Context, pod network.Pod) (string, error) {
	n := p.get()
	if n == nil {
		return "", errNoPodNetwork
	}
	return n.SetUp(ctx, pod)
}

func (p *podNetwork) TearDown(ctx context.Context, pod network.Pod) error {
	n := p.get()
	if n == nil {
		return errNoPodNetwork
	}
	return n.TearDown(ctx, pod)
}
