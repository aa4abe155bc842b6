package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Defaults, as Kubernetes' kubelet has them.
const (
	DefaultKubeletPort             = 10250
	DefaultMaxPods                 = 110
	DefaultLeaseDuration           = 40 * time.Second
	DefaultLeaseRenewInterval      = 10 * time.Second
	DefaultStatusUpdateInterval    = 10 * time.Second
	DefaultStatusReportInterval    = time.Minute
	DefaultMemoryPressureThreshold = 100 << 20 // bytes; memory.available<100Mi
	DefaultDiskPressureThreshold   = 0.10      // nodefs.available<10%
	// KubeletVersion is what nodes report as status.nodeInfo.kubeletVersion.
	KubeletVersion = "v1.32.0-minik8s"
	// NodeLeaseNamespace holds one Lease per node, named after it.
	NodeLeaseNamespace = "kube-node-lease"
	// RoleLabelPrefix + role is the label `kubectl get nodes` shows in its ROLES column.
	RoleLabelPrefix = "node-role.kubernetes.io/"
)

// Config describes the node. The first fields come from the node config file (LoadConfig);
// the rest are set by the kubelet from its flags and wiring. Zero values mean the defaults.
type Config struct {
	// Name of the Node; LoadConfig defaults it to the lowercased host name.
	Name string `json:"name"`
	// Labels are added to the ones the kubelet sets itself (hostname, os, arch).
	Labels map[string]string `json:"labels,omitempty"`
	// Roles become node-role.kubernetes.io/<role>="" labels.
	Roles []string `json:"roles,omitempty"`
	// Taints are set when the Node is created. As in Kubernetes, a restarted kubelet leaves the
	// taints of an existing Node alone: controllers and users own them from then on.
	Taints    []corev1.Taint `json:"taints,omitempty"`
	Addresses Addresses      `json:"addresses,omitempty"`

	// ContainerRuntimeVersion is reported in nodeInfo, e.g. "docker://20.10.24".
	ContainerRuntimeVersion string `json:"-"`
	// KubeletPort is where the kubelet serves logs (status.daemonEndpoints.kubeletEndpoint).
	KubeletPort int32 `json:"-"`
	// RootDir is the kubelet's state directory; its filesystem is the node's ephemeral storage.
	RootDir string `json:"-"`
	MaxPods int64  `json:"-"`
	// MemoryPressureThreshold in bytes: less memory available means MemoryPressure. It is also
	// held back from allocatable memory, as Kubernetes' hard eviction threshold is.
	MemoryPressureThreshold int64 `json:"-"`
	// DiskPressureThreshold is the free fraction of RootDir's filesystem under which the node
	// has DiskPressure; it is also held back from allocatable ephemeral storage.
	DiskPressureThreshold float64 `json:"-"`

	LeaseDuration      time.Duration `json:"-"`
	LeaseRenewInterval time.Duration `json:"-"`
	// StatusUpdateInterval is how often conditions are computed; a write happens only when
	// something changed or StatusReportInterval has passed since the last one (heartbeat).
	StatusUpdateInterval time.Duration `json:"-"`
	StatusReportInterval time.Duration `json:"-"`

	// Readiness reports whether the node can run pods: nil when the runtime answers and the
	// network is configured, else an error whose text becomes the Ready condition's message.
	// Nil means always ready.
	Readiness func(ctx context.Context) error `json:"-"`
	// Host gives the machine's facts; nil means LinuxHost.
	Host Host `json:"-"`
}

// Addresses override what the kubelet detects.
type Addresses struct {
	// InternalIP replaces the IPv4 address of the default route's interface.
	InternalIP string `json:"internalIP,omitempty"`
}

// LoadConfig reads a node config file (YAML or JSON; unknown fields are errors) and defaults
// the name to the host name. It does not validate: flags may still override fields, so call
// Validate (New does) once they have.
func LoadConfig(path string) (Config, error) {
	var cfg Config
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read node config: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("node config %s: %w", path, err)
	}
	if cfg.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return cfg, fmt.Errorf("node config %s: no name and no host name: %w", path, err)
		}
		cfg.Name = strings.ToLower(host)
	}
	return cfg, nil
}

// withDefaults fills zero values.
func (c Config) withDefaults() Config {
	if c.KubeletPort == 0 {
		c.KubeletPort = DefaultKubeletPort
	}
	if c.RootDir == "" {
		c.RootDir = "/"
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.MemoryPressureThreshold == 0 {
		c.MemoryPressureThreshold = DefaultMemoryPressureThreshold
	}
	if c.DiskPressureThreshold == 0 {
		c.DiskPressureThreshold = DefaultDiskPressureThreshold
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.LeaseRenewInterval == 0 {
		c.LeaseRenewInterval = DefaultLeaseRenewInterval
	}
	if c.StatusUpdateInterval == 0 {
		c.StatusUpdateInterval = DefaultStatusUpdateInterval
	}
	if c.StatusReportInterval == 0 {
		c.StatusReportInterval = DefaultStatusReportInterval
	}
	if c.Host == nil {
		c.Host = LinuxHost{}
	}
	return c
}

// Validate checks the config, naming the offending field.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Name == "" {
		add("name: required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.Name) {
			add("name %q: %s", c.Name, msg)
		}
	}
	for k, v := range c.Labels {
		for _, msg := range validation.IsQualifiedName(k) {
			add("labels: key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			add("labels[%s]: value %q: %s", k, v, msg)
		}
	}
	for i, r := range c.Roles {
		for _, msg := range validation.IsQualifiedName(RoleLabelPrefix + r) {
			add("roles[%d] %q: %s", i, r, msg)
		}
	}
	for i, t := range c.Taints {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			add("taints[%d].key %q: %s", i, t.Key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			add("taints[%d].value %q: %s", i, t.Value, msg)
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			add("taints[%d].effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", i, t.Effect)
		}
	}
	if ip := c.Addresses.InternalIP; ip != "" {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			add("addresses.internalIP %q: not an IPv4 address", ip)
		}
	}
	if c.KubeletPort < 0 || c.KubeletPort > 65535 {
		add("kubelet port %d: out of range", c.KubeletPort)
	}
	if c.DiskPressureThreshold < 0 || c.DiskPressureThreshold >= 1 {
		add("disk pressure threshold %v: must be a fraction in [0, 1)", c.DiskPressureThreshold)
	}
	for name, d := range map[string]time.Duration{
		"lease duration": c.LeaseDuration, "lease renew interval": c.LeaseRenewInterval,
		"status update interval": c.StatusUpdateInterval, "status report interval": c.StatusReportInterval,
	} {
		if d < 0 {
			add("%s %v: must not be negative", name, d)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node config: %w", err)
	}
	return nil
}
