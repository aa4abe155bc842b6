package cninet

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"minik8s.io/kubelet/internal/network"
)

// requiredPlugins are the binaries the configuration names.
var requiredPlugins = []string{"bridge", "host-local", "firewall", "portmap", "loopback"}

// Network attaches sandboxes to the node's bridge with libcni. It is safe for concurrent use;
// calls for the same sandbox are serialized so host-local never allocates twice for one ID.
type Network struct {
	cfg    Config
	cni    *libcni.CNIConfig
	podNet *libcni.NetworkConfigList
	loNet  *libcni.NetworkConfigList
	logger *slog.Logger

	// iptables runs the iptables binary and iptablesList one that prints; fields so unit
	// tests can record instead.
	iptables     func(ctx context.Context, args ...string) error
	iptablesList func(ctx context.Context, args ...string) (string, error)

	locks [64]sync.Mutex // striped by sandbox id

	prepMu   sync.Mutex
	prepared bool
}

var _ network.Network = (*Network)(nil)

// New validates cfg and builds the network configuration in memory. It does no I/O; the first
// SetUp (or an explicit Prepare) creates directories, checks the plugins and enables forwarding.
func New(cfg Config, logger *slog.Logger) (*Network, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	podNet, err := cfg.podList()
	if err != nil {
		return nil, err
	}
	loNet, err := cfg.loopbackList()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Network{
		cfg: cfg,
		// An explicit exec: libcni otherwise creates one lazily, racing between goroutines.
		cni: libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.cacheDir(), &invoke.DefaultExec{
			RawExec:       &invoke.RawExec{Stderr: os.Stderr},
			PluginDecoder: version.PluginDecoder{},
		}),
		podNet:       podNet,
		loNet:        loNet,
		logger:       logger.With("component", "cninet"),
		iptables:     execIPTables,
		iptablesList: execIPTablesOutput,
	}, nil
}

// Prepare makes the node ready to attach pods: state directories, plugin binaries present,
// IPv4 forwarding on. It is idempotent; SetUp calls it until it has succeeded once.
func (n *Network) Prepare(ctx context.Context) error {
	n.prepMu.Lock()
	defer n.prepMu.Unlock()
	if n.prepared {
		return nil
	}
	for _, d := range []string{n.cfg.ipamDataDir(), n.cfg.cacheDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("prepare cni: %w", err)
		}
	}
	var missing []string
	for _, p := range requiredPlugins {
		if _, err := invoke.FindInPath(p, n.cfg.PluginDirs); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("prepare cni: plugins %s not found in %s (install containernetworking-plugins)",
			strings.Join(missing, ", "), strings.Join(n.cfg.PluginDirs, ":"))
	}
	if err := n.ensureForwarding(ctx); err != nil {
		return fmt.Errorf("prepare cni: %w", err)
	}
	n.removeBridgeMasq(ctx)
	n.prepared = true
	n.logger.InfoContext(ctx, "pod network ready", "podCIDR", n.cfg.PodCIDR, "bridge", n.cfg.BridgeName)
	return nil
}

// SetUp attaches pod to the bridge and returns its IPv4 address. For a sandbox that is already
// attached to the same netns and still passes CHECK, it returns the cached address rather than
// asking host-local again (which would allocate a second one).
func (n *Network) SetUp(ctx context.Context, pod network.Pod) (string, error) {
	if pod.ID == "" || pod.NetNS == "" {
		return "", fmt.Errorf("set up pod %s/%s: sandbox id and netns are required", pod.Namespace, pod.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.PluginTimeout)
	defer cancel()
	if err := n.Prepare(ctx); err != nil {
		return "", err
	}
	mu := n.lock(pod.ID)
	mu.Lock()
	defer mu.Unlock()

	if err := checkNetNS(pod.NetNS); err != nil {
		return "", fmt.Errorf("set up pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	rt := runtimeConf(pod, podIfName)
	if ip, ok := n.attached(ctx, pod, rt); ok {
		return ip, nil
	}

	_, err := n.cni.AddNetworkList(ctx, n.loNet, runtimeConf(pod, loIfName))
	var res types.Result
	if err == nil {
		res, err = n.cni.AddNetworkList(ctx, n.podNet, rt)
	}
	if err == nil {
		var ip string
		if ip, err = podIP(res); err == nil {
			n.logger.InfoContext(ctx, "pod network set up", "pod", podKey(pod), "sandbox", pod.ID, "ip", ip)
			return ip, nil
		}
	}
	// A failed ADD can leave a veth, an address or rules behind; CNI expects the runtime to DEL.
	if derr := n.tearDown(ctx, pod); derr != nil {
		n.logger.WarnContext(ctx, "clean up after failed set up", "pod", podKey(pod), "sandbox", pod.ID, "err", derr)
	}
	return "", fmt.Errorf("set up pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// attached reports the cached address when the sandbox is already attached and healthy. A
// stale attachment (other netns, failed CHECK) is torn down so the caller attaches afresh.
func (n *Network) attached(ctx context.Context, pod network.Pod, rt *libcni.RuntimeConf) (string, bool) {
	cached, err := n.cni.GetNetworkListCachedResult(n.podNet, rt)
	if err != nil || cached == nil {
		return "", false
	}
	_, cachedRT, err := n.cni.GetNetworkListCachedConfig(n.podNet, rt)
	if err == nil && cachedRT != nil && cachedRT.NetNS == pod.NetNS {
		if err := n.cni.CheckNetworkList(ctx, n.podNet, rt); err == nil {
			if ip, err := podIP(cached); err == nil {
				n.logger.DebugContext(ctx, "pod network already set up", "pod", podKey(pod), "sandbox", pod.ID, "ip", ip)
				return ip, true
			}
		} else {
			n.logger.InfoContext(ctx, "cached pod network failed check, attaching again", "pod", podKey(pod), "sandbox", pod.ID, "err", err)
		}
	}
	if err := n.tearDown(ctx, pod); err != nil {
		n.logger.WarnContext(ctx, "tear down stale pod network", "pod", podKey(pod), "sandbox", pod.ID, "err", err)
	}
	return "", false
}

// TearDown detaches pod and releases its address. The port mappings and netns recorded at
// SetUp are used, so a caller that no longer knows them still removes every rule.
func (n *Network) TearDown(ctx context.Context, pod network.Pod) error {
	if pod.ID == "" {
		return fmt.Errorf("tear down pod %s/%s: sandbox id is required", pod.Namespace, pod.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.PluginTimeout)
	defer cancel()
	mu := n.lock(pod.ID)
	mu.Lock()
	defer mu.Unlock()
	if err := n.tearDown(ctx, pod); err != nil {
		return fmt.Errorf("tear down pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	n.logger.InfoContext(ctx, "pod network torn down", "pod", podKey(pod), "sandbox", pod.ID)
	return nil
}

func (n *Network) tearDown(ctx context.Context, pod network.Pod) error {
	rt := runtimeConf(pod, podIfName)
	var ips []string
	if _, cachedRT, err := n.cni.GetNetworkListCachedConfig(n.podNet, rt); err == nil && cachedRT != nil {
		// DEL belongs where ADD happened, even if the caller now names another netns.
		rt.CapabilityArgs = cachedRT.CapabilityArgs
		if cachedRT.NetNS != "" {
			rt.NetNS = cachedRT.NetNS
		}
	}
	if cached, err := n.cni.GetNetworkListCachedResult(n.podNet, rt); err == nil && cached != nil {
		ips, _ = resultIPv4s(cached)
	}
	// The plugins treat an empty netns as "already gone": they only release the address. A
	// path that no longer names a sandbox (a reused pid, our own netns) must never reach them.
	nsGone := false
	if err := checkNetNS(rt.NetNS); err != nil {
		nsGone = true
		rt.NetNS = ""
	}
	if err := n.cni.DelNetworkList(ctx, n.podNet, rt); err != nil {
		return err
	}
	if nsGone {
		// bridge learns the masquerade rule's address from the interface in the netns; when
		// the netns is gone it skips the rule, so remove it here from the cached address.
		n.removeMasq(ctx, pod.ID, ips)
	}
	lo := runtimeConf(pod, loIfName)
	lo.NetNS = rt.NetNS
	if err := n.cni.DelNetworkList(ctx, n.loNet, lo); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	return nil
}

func (n *Network) lock(id string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(id))
	return &n.locks[h.Sum32()%uint32(len(n.locks))]
}

// portMapping is the portMappings capability's wire form.
type portMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

func runtimeConf(pod network.Pod, ifName string) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: pod.ID,
		NetNS:       pod.NetNS,
		IfName:      ifName,
		// The plugins reject CNI_ARGS keys they do not know unless told to ignore them.
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.ID},
			{"K8S_POD_UID", pod.UID},
		},
	}
	var pms []portMapping
	for _, p := range pod.Ports {
		if p.HostPort <= 0 {
			continue
		}
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		pms = append(pms, portMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: proto, HostIP: p.HostIP})
	}
	if len(pms) > 0 {
		rt.CapabilityArgs = map[string]any{"portMappings": pms}
	}
	return rt
}

func resultIPv4s(res types.Result) ([]string, error) {
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return nil, fmt.Errorf("convert cni result: %w", err)
	}
	var ips []string
	for _, ipc := range r.IPs {
		if v4 := ipc.Address.IP.To4(); v4 != nil {
			ips = append(ips, v4.String())
		}
	}
	return ips, nil
}

func podIP(res types.Result) (string, error) {
	ips, err := resultIPv4s(res)
	if err != nil {
		return "", err
	}
	if len(ips) == 0 {
		return "", errors.New("cni result has no IPv4 address")
	}
	return ips[0], nil
}

func podKey(p network.Pod) string { return p.Namespace + "/" + p.Name }
