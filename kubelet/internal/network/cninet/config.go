package cninet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// Defaults for Config fields left empty.
const (
	DefaultNetworkName   = "minik8s"
	DefaultBridgeName    = "minik8s0"
	DefaultPluginTimeout = time.Minute
	// cniVersion 1.0.0 is the newest the Debian plugins (1.1.1) speak and what libcni caches.
	cniVersion = "1.0.0"
	podIfName  = "eth0"
	loIfName   = "lo"
)

// DefaultPluginDirs are searched for plugin binaries: Debian's package, then the upstream path.
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Config describes the node's pod network.
type Config struct {
	// PodCIDR is the node's spec.podCIDR, an IPv4 prefix such as 10.244.3.0/24. Its first
	// address is the bridge (gateway) address.
	PodCIDR string
	// RootDir is the kubelet's root directory. Allocations and libcni's result cache live under
	// RootDir/cni, so two kubelets on one machine never share them.
	RootDir string
	// NetworkName names the CNI network (host-local's directory, iptables chain hashes).
	NetworkName string
	// BridgeName is the host bridge; at most 15 characters.
	BridgeName string
	// PluginDirs are searched for the plugin binaries.
	PluginDirs []string
	// MTU of the bridge and veths; 0 keeps the plugin's default.
	MTU int
	// PluginTimeout bounds one SetUp or TearDown.
	PluginTimeout time.Duration
	// ProcSys is where sysctls are read and written; tests may point it elsewhere.
	ProcSys string
}

var networkNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62})$`)

// withDefaults fills empty fields and validates the result.
func (c Config) withDefaults() (Config, error) {
	if c.NetworkName == "" {
		c.NetworkName = DefaultNetworkName
	}
	if c.BridgeName == "" {
		c.BridgeName = DefaultBridgeName
	}
	if len(c.PluginDirs) == 0 {
		c.PluginDirs = DefaultPluginDirs
	}
	if c.PluginTimeout <= 0 {
		c.PluginTimeout = DefaultPluginTimeout
	}
	if c.ProcSys == "" {
		c.ProcSys = "/proc/sys"
	}
	var errs []error
	if _, err := podPrefix(c.PodCIDR); err != nil {
		errs = append(errs, err)
	}
	if c.RootDir == "" {
		errs = append(errs, errors.New("rootDir: required"))
	} else if !filepath.IsAbs(c.RootDir) {
		errs = append(errs, fmt.Errorf("rootDir %q: must be absolute", c.RootDir))
	}
	if !networkNameRE.MatchString(c.NetworkName) {
		errs = append(errs, fmt.Errorf("networkName %q: want lowercase letters, digits, '.', '_' or '-'", c.NetworkName))
	}
	// IFNAMSIZ is 16 including the terminating NUL.
	if len(c.BridgeName) > 15 || !regexp.MustCompile(`^[A-Za-z0-9._-]+$`).MatchString(c.BridgeName) {
		errs = append(errs, fmt.Errorf("bridgeName %q: want at most 15 of [A-Za-z0-9._-]", c.BridgeName))
	}
	if c.MTU < 0 || (c.MTU > 0 && c.MTU < 576) {
		errs = append(errs, fmt.Errorf("mtu %d: want 0 or at least 576", c.MTU))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("cni config: %w", err)
	}
	return c, nil
}

// podPrefix parses an IPv4 podCIDR that leaves room for a gateway and at least one pod.
func podPrefix(cidr string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("podCIDR %q: %w", cidr, err)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("podCIDR %q: only IPv4 is supported", cidr)
	}
	if p.Bits() > 30 {
		return netip.Prefix{}, fmt.Errorf("podCIDR %q: want /30 or larger (network, gateway, one pod, broadcast)", cidr)
	}
	return p.Masked(), nil
}

func (c Config) cniDir() string      { return filepath.Join(c.RootDir, "cni") }
func (c Config) ipamDataDir() string { return filepath.Join(c.cniDir(), "networks") }
func (c Config) cacheDir() string    { return filepath.Join(c.cniDir(), "cache") }

// ipamDir is where host-local keeps one file per allocated address.
func (c Config) ipamDir() string { return filepath.Join(c.ipamDataDir(), c.NetworkName) }

// The plugin configurations, typed so a misspelt key is a compile error, not a silent default.
type (
	confList struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
	bridgeConf struct {
		Type        string   `json:"type"`
		Bridge      string   `json:"bridge"`
		IsGateway   bool     `json:"isGateway"`
		IPMasq      bool     `json:"ipMasq"`
		HairpinMode bool     `json:"hairpinMode"`
		MTU         int      `json:"mtu,omitempty"`
		IPAM        ipamConf `json:"ipam"`
	}
	ipamConf struct {
		Type    string        `json:"type"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []ipamRoute   `json:"routes"`
		DataDir string        `json:"dataDir"`
	}
	ipamRange struct {
		Subnet  string `json:"subnet"`
		Gateway string `json:"gateway"`
	}
	ipamRoute struct {
		Dst string `json:"dst"`
	}
	firewallConf struct {
		Type    string `json:"type"`
		Backend string `json:"backend"`
	}
	portmapConf struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities"`
		SNAT         bool            `json:"snat"`
	}
	loopbackConf struct {
		Type string `json:"type"`
	}
)

// podList builds the pod network: bridge + host-local, firewall, portmap.
func (c Config) podList() (*libcni.NetworkConfigList, error) {
	p, err := podPrefix(c.PodCIDR)
	if err != nil {
		return nil, err
	}
	list := confList{
		CNIVersion: cniVersion,
		Name:       c.NetworkName,
		Plugins: []any{
			bridgeConf{
				Type:      "bridge",
				Bridge:    c.BridgeName,
				IsGateway: true,
				// No NAT between pods: the kubelet masquerades only what leaves the cluster
				// CIDR (nodenet's KUBELET-PODNET-POSTROUTING), so a pod on another node
				// sees the sender's own address.
				IPMasq:      false,
				HairpinMode: true, // a pod reaches itself through its own hostPort or Service IP
				MTU:         c.MTU,
				IPAM: ipamConf{
					Type:    "host-local",
					Ranges:  [][]ipamRange{{{Subnet: p.String(), Gateway: p.Addr().Next().String()}}},
					Routes:  []ipamRoute{{Dst: "0.0.0.0/0"}},
					DataDir: c.ipamDataDir(),
				},
			},
			// Docker sets the FORWARD policy to DROP and br_netfilter sends bridged frames
			// through it, so pod traffic needs explicit accepts.
			firewallConf{Type: "firewall", Backend: "iptables"},
			portmapConf{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}, SNAT: true},
		},
	}
	return marshalList(list)
}

// loopbackList brings up lo inside the sandbox; it is its own network because it attaches a
// different interface than the pod list.
func (c Config) loopbackList() (*libcni.NetworkConfigList, error) {
	return marshalList(confList{
		CNIVersion: cniVersion,
		Name:       c.NetworkName + "-loopback",
		Plugins:    []any{loopbackConf{Type: "loopback"}},
	})
}

func marshalList(l confList) (*libcni.NetworkConfigList, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("marshal cni config %s: %w", l.Name, err)
	}
	nl, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		return nil, fmt.Errorf("parse cni config %s: %w", l.Name, err)
	}
	return nl, nil
}
