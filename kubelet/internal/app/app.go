package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"minik8s.io/kubelet/internal/network/nodenet"
	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/kubelet/internal/podcache/rediscache"
	"minik8s.io/kubelet/internal/pods"
	"minik8s.io/kubelet/internal/pods/dns"
	"minik8s.io/kubelet/internal/pods/prober"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/dockerruntime"
	"minik8s.io/kubelet/internal/server"
	"minik8s.io/kubelet/internal/stats"
	"minik8s.io/kubelet/internal/streaming"
	"minik8s.io/kubelet/internal/token"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/manager"
	"minik8s.io/shared/run"
	"minik8s.io/shared/workqueue/clock"
)

// Config is the kubelet's configuration, from flags and the node config file.
type Config struct {
	Node       nodestatus.Config
	Kubeconfig string
	RootDir    string
	DockerHost string
	RedisAddr  string
	AMQPURL    string
	Address    string
	Port       int
	// SandboxImage is the pause image of every pod.
	SandboxImage string
	CNIBinDirs   []string
	BridgeName   string
	// ClusterCIDR is the whole pod network (--cluster-cidr): pod traffic leaving it is
	// masqueraded, traffic to and from it is let through FORWARD.
	ClusterCIDR string
	// NetworkMode is how pods reach other nodes' pods (--network-mode): host-gw or vxlan.
	NetworkMode string
	// ClusterDNS (--cluster-dns) is what ClusterFirst pods resolve with, under ClusterDomain
	// (--cluster-domain); none keeps them on the node's resolver. ResolvConf (--resolv-conf)
	// is the node's resolver configuration pods build on.
	ClusterDNS    []string
	ClusterDomain string
	ResolvConf    string
	// ServiceCIDR is the Service range (--service-cidr): its first address is the kubernetes
	// Service's, whose variables every container gets even before the kubelet has seen it.
	// Empty means DefaultServiceCIDR.
	ServiceCIDR string
	PLEGPeriod  time.Duration
	// RelistPeriod is how often the desired pods are relisted from the API (the bus is a hint).
	RelistPeriod time.Duration
	// UsagePeriod is how often the node's usage is sampled for its Node's annotations;
	// negative turns the report off.
	UsagePeriod     time.Duration
	ShutdownTimeout time.Duration
	// StreamIdleTimeout ends an exec, attach or port-forward session idle that long; zero
	// means the kubelet's 4 hours.
	StreamIdleTimeout time.Duration
}

// Validate checks the configuration before anything starts.
func (c *Config) Validate() error {
	if c.Node.Name == "" {
		return errors.New("the node has no name (--node-name or the node config's name)")
	}
	// Negative turns the report off and zero means the default; otherwise a sample at least
	// every refresh keeps the "rewritten every minute" promise the scheduler's staleness
	// bound relies on, and a floor keeps Docker's stats calls cheap.
	if p := c.UsagePeriod; p > 0 && (p < time.Second || p > nodestatus.DefaultUsageRefresh) {
		return fmt.Errorf("--node-usage-period %s must be between 1s and %s (0 for the default %s, negative to turn it off)",
			p, nodestatus.DefaultUsageRefresh, nodestatus.DefaultUsagePeriod)
	}
	if c.StreamIdleTimeout < 0 {
		return fmt.Errorf("--streaming-connection-idle-timeout %s must not be negative (0 for the default %s)",
			c.StreamIdleTimeout, streaming.DefaultIdleTimeout)
	}
	if c.RootDir == "" || !filepath.IsAbs(c.RootDir) {
		return fmt.Errorf("--root-dir %q must be an absolute path", c.RootDir)
	}
	if c.Port <= 0 || c.Port > 65535 {
		return fmt.Errorf("--port %d is not a port", c.Port)
	}
	if net.ParseIP(c.Address) == nil {
		return fmt.Errorf("--address %q is not an IP address", c.Address)
	}
	if p, err := netip.ParsePrefix(c.ClusterCIDR); err != nil || !p.Addr().Is4() {
		return fmt.Errorf("--cluster-cidr %q is not an IPv4 prefix", c.ClusterCIDR)
	}
	if c.ServiceCIDR != "" {
		if _, err := masterService(c.ServiceCIDR); err != nil {
			return err
		}
	}
	if _, err := nodenet.ParseMode(c.NetworkMode); err != nil {
		return fmt.Errorf("--network-mode: %w", err)
	}
	for _, ip := range c.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("--cluster-dns: %q is not an IP address", ip)
		}
	}
	if len(c.ClusterDNS) > dns.MaxNameservers {
		return fmt.Errorf("--cluster-dns: %d servers, at most %d fit a resolv.conf", len(c.ClusterDNS), dns.MaxNameservers)
	}
	if d := c.ClusterDomain; d != "" {
		if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
			return fmt.Errorf("--cluster-domain %q: %s", d, strings.Join(errs, "; "))
		}
	}
	return nil
}

// apiPods reads and writes pods through the apiserver for the pod workers.
type apiPods struct {
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
}

// UpdateStatus writes a pod's status with the resourceVersion the status manager chose and
// returns the one written; a conflict makes the status manager retry with a newer copy.
func (a apiPods) UpdateStatus(ctx context.Context, pod *corev1.Pod) (string, error) {
	written, err := a.pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return written.ResourceVersion, nil
}

// Finalize ends a graceful deletion once the pod's containers are gone.
func (a apiPods) Finalize(ctx context.Context, pod *corev1.Pod) error {
	zero := int64(0)
	uid := pod.UID
	err := a.pods.Delete(ctx, pod.Namespace, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrConflict) {
		// Already gone, or a new pod of the same name: nothing left of this one to finalize.
		return nil
	}
	return err
}

// apiLookup reads the ConfigMaps, Secrets and claims pods refer to (env and volumes), and the
// volumes claims are bound to.
type apiLookup struct {
	cms     *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList]
	secrets *client.Typed[*corev1.Secret, *corev1.SecretList]
	pvcs    *client.Typed[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
	pvs     *client.Typed[*corev1.PersistentVolume, *corev1.PersistentVolumeList]
}

func (l apiLookup) PersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return l.pvcs.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (l apiLookup) PersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return l.pvs.Get(ctx, "", name, metav1.GetOptions{})
}

func (l apiLookup) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return l.cms.Get(ctx, namespace, name, metav1.GetOptions{})
}

func (l apiLookup) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return l.secrets.Get(ctx, namespace, name, metav1.GetOptions{})
}

// Run runs the kubelet until ctx ends. Containers keep running after it returns.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	node := cfg.Node.Name
	if err := os.MkdirAll(cfg.RootDir, 0o755); err != nil {
		return fmt.Errorf("root dir: %w", err)
	}
	m, err := manager.New(manager.Options{Name: "kubelet", Host: node, Kubeconfig: cfg.Kubeconfig, AMQPURL: cfg.AMQPURL,
		Queue: bus.KubeletQueue(node), BusName: "kubelet." + node, RelistPeriod: cfg.RelistPeriod,
		ShutdownTimeout: cfg.ShutdownTimeout, Logger: log})
	if err != nil {
		return err
	}
	docker, version, err := connectRuntime(ctx, cfg.DockerHost)
	if err != nil {
		return err
	}
	defer docker.Close()
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	defer rdb.Close()

	netw := &podNetwork{cfg: cfg, log: log.With("part", "cni")}
	agent, hostIP, err := newNodeAgent(cfg, m.Client(), docker, version, netw, log)
	if err != nil {
		return err
	}
	podsAPI := client.MustFor[*corev1.Pod, *corev1.PodList](m.Client())
	master, err := masterService(cmp.Or(cfg.ServiceCIDR, DefaultServiceCIDR))
	if err != nil {
		return err
	}
	tokens := token.New(token.Config{Requester: newAPITokens(m.Client()), Logger: log.With("part", "token")})
	services := newServiceList(m.Informers().Services(), master)
	// prober_probe_total, counted by the pod workers' probes and served at /metrics/probes.
	probes := prober.NewResultCounter()
	podManager := newPodManager(cfg, hostIP, m, docker, netw, tokens, services, probes)
	src := newSource(node, podsAPI, podManager, rediscache.New(rdb, rediscache.NodePrefix(node)), log.With("part", "source"))
	src.synced, src.period = podManager.MarkSynced, cfg.RelistPeriod
	https, usage, err := newServing(cfg, hostIP, docker, m, probes, podManager.Containers, log)
	if err != nil {
		return err
	}
	// Every Node, from the same queue: this node's for its pod CIDR and status, the others'
	// for routes to their pods.
	nodes := m.Informers().Nodes()
	routes, err := newRoutes(cfg, node, hostIP, agent, nodeList{nodes}, log.With("part", "nodenet"))
	if err != nil {
		return err
	}
	nodes.AddEventHandler(nodeHandler(agent, routes.Trigger))
	netw.agent, netw.hostIP, netw.routes = agent, hostIP, routes.Trigger

	// Before anything is known from the API, what the cache says keeps running.
	if n, err := src.fromCache(ctx); err != nil {
		log.Warn("reading the pod cache", "err", err)
	} else if n > 0 {
		log.Info("restored desired pods from the cache", "pods", n)
	}
	m.Route("pods", src.handle)
	m.OnConnect(src.connected)
	m.Add("pods", podManager)
	m.Add("tokens", tokens)
	m.Add("nodenet", routes)
	m.Add("node", agent)
	m.Add("pod-network", netw)
	if usage != nil {
		m.Add("nodeusage", afterRegistration(agent, usage))
	}
	m.Add("relist", src)
	m.Add("https", https)
	return m.Start(ctx)
}

// connectRuntime connects to Docker and reads its version.
func connectRuntime(ctx context.Context, host string) (*dockerruntime.Runtime, string, error) {
	docker, err := dockerruntime.New(host)
	if err != nil {
		return nil, "", err
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	version, err := docker.Version(vctx)
	if err != nil {
		docker.Close()
		return nil, "", fmt.Errorf("container runtime: %w", err)
	}
	return docker, version, nil
}

// newNodeAgent builds the agent that registers the Node and keeps its status, and finds the
// node's address (its InternalIP).
func newNodeAgent(cfg Config, cl *client.Client, docker *dockerruntime.Runtime, version string, netw *podNetwork, log *slog.Logger) (*nodestatus.Agent, string, error) {
	ncfg := cfg.Node
	ncfg.ContainerRuntimeVersion = version
	ncfg.KubeletPort = int32(cfg.Port)
	ncfg.RootDir = cfg.RootDir
	ncfg.Readiness = func(ctx context.Context) error {
		if _, err := docker.Version(ctx); err != nil {
			return fmt.Errorf("container runtime is down: %v", err)
		}
		if !netw.ready() {
			return errors.New("network plugin not ready: no pod CIDR yet")
		}
		return nil
	}
	agent, err := nodestatus.New(ncfg, nodestatus.ClientAPI(cl), clock.Real{}, log.With("part", "nodestatus"))
	if err != nil {
		return nil, "", err
	}
	hostIP := ncfg.Addresses.InternalIP
	if addrs, err := (nodestatus.LinuxHost{}).Addresses(); err == nil && hostIP == "" {
		for _, a := range addrs {
			if a.Type == corev1.NodeInternalIP {
				hostIP = a.Address
			}
		}
	}
	return agent, hostIP, nil
}

// newPodManager builds the pod workers.
func newPodManager(cfg Config, hostIP string, m *manager.Manager, docker *dockerruntime.Runtime, netw *podNetwork, tokens *token.Manager, services serviceList, probes *prometheus.CounterVec) *pods.Manager {
	cl := m.Client()
	api := apiPods{pods: client.MustFor[*corev1.Pod, *corev1.PodList](cl)}
	return pods.New(pods.Config{
		NodeName: cfg.Node.Name, HostIP: hostIP, RootDir: cfg.RootDir, SandboxImage: cfg.SandboxImage,
		Lookup: apiLookup{cms: client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](cl),
			secrets: client.MustFor[*corev1.Secret, *corev1.SecretList](cl),
			pvcs:    client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](cl),
			pvs:     client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](cl)},
		ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain, ResolvConf: cfg.ResolvConf,
		Tokens: tokens, Services: services, Allocatable: nodeAllocatable(cfg.Node, nodestatus.LinuxHost{}),
		Runtime: docker, Network: netw, Status: api, Finalizer: api, Recorder: m.Recorder(), ProbeResults: probes,
		Logger: m.Logger().With("part", "pods"), RelistPeriod: cfg.PLEGPeriod,
	})
}

// newServing builds the kubelet's HTTPS server (logs, exec, attach, port-forward, stats,
// metrics, images) and the reporter of the node's usage (nil when turned off).
func newServing(cfg Config, hostIP string, docker *dockerruntime.Runtime, m *manager.Manager, probes *prometheus.CounterVec, listed func() ([]runtime.Container, time.Time), log *slog.Logger) (*run.HTTPServer, *nodestatus.UsageReporter, error) {
	node := cfg.Node.Name
	cert, err := servingCert(filepath.Join(cfg.RootDir, "pki"), node, []string{hostIP, node, "127.0.0.1", "localhost"}, time.Now())
	if err != nil {
		return nil, nil, err
	}
	// The component's registry: its informers' and bus's metrics, Go's and the process's,
	// and the server's own, all at /metrics.
	reg := m.Metrics()
	probeReg := prometheus.NewRegistry()
	probeReg.MustRegister(probes)
	scfg := server.Config{Node: node, Runtime: docker, Containers: containerIndex{rt: docker, node: node},
		Review: reviewer(m.ClientConfig()), Registry: reg.Registry, Probes: probeReg, Logger: log.With("part", "server"),
		StreamIdleTimeout: cfg.StreamIdleTimeout}
	// Container and node usage from cgroups and proc, as cAdvisor reads them.
	// A scrape reuses the PLEG's relist, at most a second old, rather than listing Docker.
	if reader, err := stats.New(stats.Config{Runtime: docker, Node: node, Listed: listed}); err != nil {
		log.Warn("no /metrics/resource or /metrics/cadvisor: cannot read cgroups", "err", err)
	} else {
		scfg.Usage = reader
	}
	srv := server.New(scfg)
	reg.MustRegister(server.NewNodeNameCollector(node))
	var usage *nodestatus.UsageReporter
	if cfg.UsagePeriod >= 0 {
		usage, err = nodestatus.NewUsageReporter(nodestatus.UsageConfig{Node: node, Period: cfg.UsagePeriod},
			usageSource{srv}, client.MustFor[*corev1.Node, *corev1.NodeList](m.Client()), clock.Real{}, log.With("part", "nodeusage"))
		if err != nil {
			return nil, nil, err
		}
	}
	httpSrv := &http.Server{
		Addr:              net.JoinHostPort(cfg.Address, strconv.Itoa(cfg.Port)),
		Handler:           srv.Handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	httpSrv.RegisterOnShutdown(srv.CloseStreams)
	ln, err := net.Listen("tcp", httpSrv.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	return &run.HTTPServer{Name: "https", Server: httpSrv, Listener: ln, TLS: true, Logger: log.With("node", node)}, usage, nil
}

// afterRegistration runs r once the node is registered: patching a Node that does not exist
// yet would only fail.
func afterRegistration(agent *nodestatus.Agent, r run.Runnable) run.Runnable {
	return run.Func(func(ctx context.Context) error {
		select {
		case <-agent.Registered():
		case <-ctx.Done():
			return nil
		}
		return r.Start(ctx)
	})
}
