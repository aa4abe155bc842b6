package nodestatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// Usage reporting defaults. A node writes its usage at most once a period and, between
// refreshes, only when it moved by more than the larger of the absolute threshold and the
// fraction of allocatable: thousands of idle nodes then cost one small patch a minute each.
const (
	DefaultUsagePeriod          = 10 * time.Second
	DefaultUsageRefresh         = time.Minute
	DefaultUsageCPUThreshold    = 50       // millicores
	DefaultUsageMemoryThreshold = 64 << 20 // bytes
	DefaultUsageThresholdShare  = 0.05     // of allocatable
	usagePatchTimeout           = 10 * time.Second
	usageSampleTimeout          = 10 * time.Second
	nanosPerMilliCoreSecond     = 1e6 // ns of CPU time per second for one millicore
)

// ContainerUsage is one running container's cumulative CPU time and current memory working
// set, sampled at Time.
type ContainerUsage struct {
	// ID names the container instance; a restarted container must get a new one.
	ID          string
	CPUNanos    uint64
	MemoryBytes uint64
	Time        time.Time
}

// UsageSource samples the running containers of the node's pods.
type UsageSource interface {
	ContainerUsage(ctx context.Context) ([]ContainerUsage, error)
}

// NodePatcher patches a Node; the shared REST client satisfies it.
type NodePatcher interface {
	Patch(ctx context.Context, namespace, name string, pt types.PatchType, data []byte, subresource ...string) (*corev1.Node, error)
}

// UsageConfig tunes a UsageReporter; zero values mean the defaults.
type UsageConfig struct {
	Node string
	// Period is how often containers are sampled.
	Period time.Duration
	// Refresh is the longest a report stays unrewritten, so readers can tell a live report
	// from one a dead kubelet left behind.
	Refresh time.Duration
	// CPUThreshold (millicores), MemoryThreshold (bytes) and ThresholdShare (of the node's
	// allocatable; the larger of the two wins) are how far usage must move to be written
	// before Refresh is due.
	CPUThreshold    int64
	MemoryThreshold int64
	ThresholdShare  float64
}

func (c UsageConfig) withDefaults() UsageConfig {
	if c.Period <= 0 {
		c.Period = DefaultUsagePeriod
	}
	if c.Refresh <= 0 {
		c.Refresh = DefaultUsageRefresh
	}
	if c.CPUThreshold <= 0 {
		c.CPUThreshold = DefaultUsageCPUThreshold
	}
	if c.MemoryThreshold <= 0 {
		c.MemoryThreshold = DefaultUsageMemoryThreshold
	}
	if c.ThresholdShare <= 0 {
		c.ThresholdShare = DefaultUsageThresholdShare
	}
	return c
}

// NodeUsage is what the node's pods use: a CPU rate and a memory working set, at Time.
type NodeUsage struct {
	MilliCPU int64
	Memory   int64
	Time     time.Time
}

// UsageReporter samples the node's containers every period and writes the node's usage as
// annotations (scheme.AnnotationUsage*) with a merge patch on the Node's metadata.
type UsageReporter struct {
	cfg    UsageConfig
	source UsageSource
	nodes  NodePatcher
	clk    clock.Clock
	log    *slog.Logger

	mu    sync.Mutex
	prev  map[string]ContainerUsage // last sample, by container id
	last  *NodeUsage                // last usage written
	alloc NodeUsage                 // the node's allocatable, from the last patch's answer
}

// NewUsageReporter returns a reporter; it does no I/O.
func NewUsageReporter(cfg UsageConfig, source UsageSource, nodes NodePatcher, clk clock.Clock, log *slog.Logger) (*UsageReporter, error) {
	if cfg.Node == "" {
		return nil, errors.New("nodestatus: the usage reporter needs the node's name")
	}
	if source == nil || nodes == nil {
		return nil, errors.New("nodestatus: the usage reporter needs a usage source and a node client")
	}
	if clk == nil {
		clk = clock.Real{}
	}
	if log == nil {
		log = slog.Default()
	}
	return &UsageReporter{cfg: cfg.withDefaults(), source: source, nodes: nodes, clk: clk,
		log: log.With("component", "nodeusage", "node", cfg.Node)}, nil
}

// Start samples and reports every period until ctx ends; it returns nil then. Failures are
// logged and retried at the next period.
func (r *UsageReporter) Start(ctx context.Context) error {
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("report node usage", "err", err)
		}
		t := r.clk.NewTimer(r.cfg.Period)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// Sync takes one sample and writes the usage when it moved enough or the last report is due
// for a refresh. The first sample only sets the baseline for the CPU rate.
func (r *UsageReporter) Sync(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, usageSampleTimeout)
	samples, err := r.source.ContainerUsage(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("sample containers: %w", err)
	}
	now := r.clk.Now()
	r.mu.Lock()
	first := r.prev == nil
	usage := nodeUsage(r.prev, samples, now)
	r.prev = make(map[string]ContainerUsage, len(samples))
	for _, s := range samples {
		if s.Time.IsZero() {
			s.Time = now
		}
		r.prev[s.ID] = s
	}
	due := !first && r.dueLocked(usage)
	r.mu.Unlock()
	if !due {
		return nil
	}
	node, err := r.patch(ctx, usage)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.last = &usage
	if node != nil {
		r.alloc = allocatable(node)
	}
	r.mu.Unlock()
	r.log.Debug("node usage written", "cpu", usage.MilliCPU, "memory", usage.Memory)
	return nil
}

// Last is the usage last written, if any.
func (r *UsageReporter) Last() (NodeUsage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return NodeUsage{}, false
	}
	return *r.last, true
}

func (r *UsageReporter) dueLocked(u NodeUsage) bool {
	if r.last == nil || u.Time.Sub(r.last.Time) >= r.cfg.Refresh {
		return true
	}
	cpuStep := max(r.cfg.CPUThreshold, int64(r.cfg.ThresholdShare*float64(r.alloc.MilliCPU)))
	memStep := max(r.cfg.MemoryThreshold, int64(r.cfg.ThresholdShare*float64(r.alloc.Memory)))
	return abs(u.MilliCPU-r.last.MilliCPU) > cpuStep || abs(u.Memory-r.last.Memory) > memStep
}

func (r *UsageReporter) patch(ctx context.Context, u NodeUsage) (*corev1.Node, error) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": UsageAnnotations(u)}})
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, usagePatchTimeout)
	defer cancel()
	node, err := r.nodes.Patch(pctx, "", r.cfg.Node, types.MergePatchType, body)
	if err != nil {
		return nil, fmt.Errorf("patch node %s usage: %w", r.cfg.Node, err)
	}
	return node, nil
}

// UsageAnnotations are the annotations that carry u.
func UsageAnnotations(u NodeUsage) map[string]string {
	return map[string]string{
		scheme.AnnotationUsageCPU:    resource.NewMilliQuantity(u.MilliCPU, resource.DecimalSI).String(),
		scheme.AnnotationUsageMemory: resource.NewQuantity(u.Memory, resource.BinarySI).String(),
		scheme.AnnotationUsageTime:   u.Time.UTC().Format(time.RFC3339),
	}
}

// nodeUsage sums the containers' memory and the CPU rate of each container seen in both
// samples: (CPU now - CPU before) / elapsed, on the container's own timestamps. A container
// not in prev (just started) adds no CPU until the next sample; one whose counter went back
// is skipped.
func nodeUsage(prev map[string]ContainerUsage, cur []ContainerUsage, now time.Time) NodeUsage {
	u := NodeUsage{Time: now}
	var rate float64 // ns of CPU per second
	for _, c := range cur {
		u.Memory += int64(c.MemoryBytes)
		p, ok := prev[c.ID]
		if !ok {
			continue
		}
		at := c.Time
		if at.IsZero() {
			at = now
		}
		dt := at.Sub(p.Time).Seconds()
		if dt <= 0 || c.CPUNanos < p.CPUNanos {
			continue
		}
		rate += float64(c.CPUNanos-p.CPUNanos) / dt
	}
	u.MilliCPU = int64(rate/nanosPerMilliCoreSecond + 0.5)
	return u
}

func allocatable(n *corev1.Node) NodeUsage {
	list := n.Status.Allocatable
	if len(list) == 0 {
		list = n.Status.Capacity
	}
	return NodeUsage{MilliCPU: list.Cpu().MilliValue(), Memory: list.Memory().Value()}
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
