package nodestatus

import (
	"context"
	"fmt"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons and messages, as Kubernetes' kubelet writes them so tools that match on
// them keep working.
const (
	ReasonReady    = "KubeletReady"
	ReasonNotReady = "KubeletNotReady"
	MessageReady   = "kubelet is posting ready status"

	ReasonSufficientMemory   = "KubeletHasSufficientMemory"
	ReasonInsufficientMemory = "KubeletHasInsufficientMemory"
	ReasonNoDiskPressure     = "KubeletHasNoDiskPressure"
	ReasonDiskPressure       = "KubeletHasDiskPressure"
	ReasonSufficientPID      = "KubeletHasSufficientPID"
)

// facts is one reading of the host and of the kubelet's readiness.
type facts struct {
	cpu       int
	memTotal  int64
	memAvail  int64
	disk      DiskStats
	kernel    string
	osImage   string
	addresses []corev1.NodeAddress
	notReady  error // nil when ready
}

// readFacts asks the host for everything the Node reports.
func readFacts(ctx context.Context, cfg Config) (facts, error) {
	h := cfg.Host
	f := facts{cpu: h.CPU()}
	var err error
	if f.memTotal, err = h.MemoryTotal(); err != nil {
		return f, fmt.Errorf("memory total: %w", err)
	}
	if f.memAvail, err = h.MemoryAvailable(); err != nil {
		return f, fmt.Errorf("memory available: %w", err)
	}
	if f.disk, err = h.DiskStats(cfg.RootDir); err != nil {
		return f, fmt.Errorf("disk of %s: %w", cfg.RootDir, err)
	}
	if f.kernel, err = h.Kernel(); err != nil {
		return f, fmt.Errorf("kernel version: %w", err)
	}
	if f.osImage, err = h.OSImage(); err != nil {
		return f, fmt.Errorf("os image: %w", err)
	}
	if f.addresses, err = h.Addresses(); err != nil && cfg.Addresses.InternalIP == "" {
		return f, fmt.Errorf("addresses: %w", err)
	}
	if cfg.Readiness != nil {
		// A readiness check that hangs must not stall heartbeats: the node would go NotReady
		// for the wrong reason.
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		f.notReady = cfg.Readiness(rctx)
		cancel()
	}
	return f, nil
}

// nodeLabels are the labels the kubelet owns: its own well-known ones, roles and the config's.
func nodeLabels(cfg Config) map[string]string {
	l := map[string]string{
		corev1.LabelHostname:      cfg.Name,
		corev1.LabelOSStable:      runtime.GOOS,
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   runtime.GOOS,
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	for _, r := range cfg.Roles {
		l[RoleLabelPrefix+r] = ""
	}
	for k, v := range cfg.Labels {
		l[k] = v
	}
	return l
}

// newNode is the Node a kubelet registers. podCIDR is empty on a first registration (the
// apiserver assigns one) and the old block when the Node was deleted under a running kubelet,
// whose pods still use it.
func newNode(cfg Config, f facts, podCIDR string, now time.Time) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: cfg.Name, Labels: nodeLabels(cfg)},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), cfg.Taints...), PodCIDR: podCIDR},
	}
	if podCIDR != "" {
		n.Spec.PodCIDRs = []string{podCIDR}
	}
	n.Status = nodeStatus(cfg, f, corev1.NodeStatus{}, now)
	return n
}

// nodeStatus is prev with every field the kubelet owns brought up to date. Fields others own
// (images, volumes, conditions of other components) stay as they were.
func nodeStatus(cfg Config, f facts, prev corev1.NodeStatus, now time.Time) corev1.NodeStatus {
	s := *prev.DeepCopy()
	memAlloc := max(f.memTotal-cfg.MemoryPressureThreshold, 0)
	diskAlloc := f.disk.Capacity - int64(float64(f.disk.Capacity)*cfg.DiskPressureThreshold)
	s.Capacity = corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(f.cpu), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(f.memTotal, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(cfg.MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(f.disk.Capacity, resource.BinarySI),
	}
	s.Allocatable = corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(f.cpu), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memAlloc, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(cfg.MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(diskAlloc, resource.BinarySI),
	}
	s.Addresses = nodeAddresses(cfg, f.addresses, prev.Addresses)
	s.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: cfg.KubeletPort}}
	s.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               prev.NodeInfo.MachineID,
		SystemUUID:              prev.NodeInfo.SystemUUID,
		BootID:                  prev.NodeInfo.BootID,
		KernelVersion:           f.kernel,
		OSImage:                 f.osImage,
		ContainerRuntimeVersion: cfg.ContainerRuntimeVersion,
		KubeletVersion:          KubeletVersion,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
	s.Conditions = nodeConditions(cfg, f, prev.Conditions, now)
	return s
}

// nodeAddresses: the InternalIP comes from the config, else the host, else what was reported
// before (a host that briefly has no address should not make the node unreachable for the log
// proxy). The Hostname is the node name, as with kubelet --hostname-override: several
// simulated nodes share one host name.
func nodeAddresses(cfg Config, detected, prev []corev1.NodeAddress) []corev1.NodeAddress {
	ip := cfg.Addresses.InternalIP
	for _, sources := range [][]corev1.NodeAddress{detected, prev} {
		for _, a := range sources {
			if ip == "" && a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
	}
	var out []corev1.NodeAddress
	if ip != "" {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: cfg.Name})
}

// nodeConditions updates the kubelet's four conditions in prev (others keep their place).
// A condition's lastTransitionTime moves only when its status does; lastHeartbeatTime is now.
func nodeConditions(cfg Config, f facts, prev []corev1.NodeCondition, now time.Time) []corev1.NodeCondition {
	memPressure := f.memAvail < cfg.MemoryPressureThreshold
	diskPressure := f.disk.Capacity > 0 &&
		float64(f.disk.Available) < float64(f.disk.Capacity)*cfg.DiskPressureThreshold
	want := []corev1.NodeCondition{
		pick(corev1.NodeMemoryPressure, memPressure,
			ReasonInsufficientMemory, "kubelet has insufficient memory available",
			ReasonSufficientMemory, "kubelet has sufficient memory available"),
		pick(corev1.NodeDiskPressure, diskPressure,
			ReasonDiskPressure, "kubelet has disk pressure",
			ReasonNoDiskPressure, "kubelet has no disk pressure"),
		pick(corev1.NodePIDPressure, false, "", "", ReasonSufficientPID, "kubelet has sufficient PID available"),
	}
	if f.notReady == nil {
		want = append(want, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: ReasonReady, Message: MessageReady})
	} else {
		want = append(want, corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: ReasonNotReady, Message: f.notReady.Error()})
	}

	out := make([]corev1.NodeCondition, 0, len(prev)+len(want))
	for _, c := range prev {
		out = append(out, *c.DeepCopy())
	}
	t := metav1.NewTime(now)
	for _, w := range want {
		w.LastHeartbeatTime, w.LastTransitionTime = t, t
		i := conditionIndex(out, w.Type)
		if i < 0 {
			out = append(out, w)
			continue
		}
		if out[i].Status == w.Status {
			w.LastTransitionTime = out[i].LastTransitionTime
		}
		out[i] = w
	}
	return out
}

func pick(typ corev1.NodeConditionType, on bool, onReason, onMsg, offReason, offMsg string) corev1.NodeCondition {
	if on {
		return corev1.NodeCondition{Type: typ, Status: corev1.ConditionTrue, Reason: onReason, Message: onMsg}
	}
	return corev1.NodeCondition{Type: typ, Status: corev1.ConditionFalse, Reason: offReason, Message: offMsg}
}

func conditionIndex(cs []corev1.NodeCondition, t corev1.NodeConditionType) int {
	for i := range cs {
		if cs[i].Type == t {
			return i
		}
	}
	return -1
}

// statusChanged reports whether next says anything old does not, heartbeats aside: those
// alone are written only every StatusReportInterval.
func statusChanged(old, next corev1.NodeStatus) bool {
	strip := func(s corev1.NodeStatus) corev1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return !apiequality.Semantic.DeepEqual(strip(old), strip(next))
}
