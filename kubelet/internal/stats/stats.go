package stats

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"minik8s.io/kubelet/internal/cgroups"
	"minik8s.io/kubelet/internal/pods/spec"
	rt "minik8s.io/kubelet/internal/runtime"
)

// Runtime is the part of the container runtime the reader asks: the node's containers, and
// once per container what Docker's list does not say (pid, start time, writable layer).
type Runtime interface {
	List(ctx context.Context, match map[string]string) ([]rt.Container, error)
	Inspect(ctx context.Context, id string) (rt.Container, error)
}

// ContainerInfo is a running container the kubelet started, with what its series are labelled by.
type ContainerInfo struct {
	ID string
	// Name is the runtime's name of the container (cAdvisor's `name`), Image its image.
	Name, Image string
	// Namespace, Pod, PodUID and Container name it in Kubernetes; a pod's sandbox is the
	// container "POD", as dockershim named it.
	Namespace, Pod, PodUID, Container string
	Sandbox                           bool
	Pid                               int
	Started                           time.Time
	writableLayer                     string
}

// Sample is one reading of a container.
type Sample struct {
	ContainerInfo
	// Cgroup is the container's control group path (cAdvisor's `id`).
	Cgroup string
	Time   time.Time
	Stats  cgroups.Stats
	// Net is the pod's network interfaces, read for its sandbox, which holds the network
	// namespace; nil for the other containers.
	Net []cgroups.Interface
	// FSUsage is the size of the container's writable layer in bytes, measured at most once
	// a minute; FSKnown is false where the runtime does not say where that layer is.
	FSUsage uint64
	FSKnown bool
	// FSDevice is the device holding the writable layer; IODevices names the devices of
	// Stats.IO, in order ("/dev/sda", or "major:minor" where sys does not say).
	FSDevice  string
	IODevices []string
}

// Node is one reading of the machine, as the node's own usage (not the sum of its pods).
type Node struct {
	Time   time.Time
	CPU    cgroups.CPU
	Memory cgroups.Memory
	// Net is the interfaces of the kubelet's network namespace: the node's.
	Net   []cgroups.Interface
	Cores int
}

// Snapshot is the node and every running container at one time.
type Snapshot struct {
	Node       Node
	Containers []Sample
}

// Config is what a Reader needs.
type Config struct {
	Runtime Runtime
	// Node is the node's name: only containers labelled with it are read (nodes on one
	// machine may share a runtime).
	Node string
	// CgroupRoot, ProcRoot and SysRoot are where the cgroup hierarchy, proc and sys are
	// mounted (/sys/fs/cgroup, /proc, /sys).
	CgroupRoot, ProcRoot, SysRoot string
	Now                           func() time.Time
	// FSPeriod is how long a writable layer's measured size is reused (1 min).
	FSPeriod time.Duration
	// Cores is the machine's logical CPUs; 0 means runtime.NumCPU.
	Cores int
	// Listed, when set, returns a recent list of the node's containers and its time (the
	// PLEG's relist): a scrape uses it rather than listing the runtime again while it is
	// younger than MaxListAge (2 s). Listing takes Docker a tenth of a second with a hundred pods.
	Listed     func() ([]rt.Container, time.Time)
	MaxListAge time.Duration
}

// Reader reads the node's and its containers' usage from cgroups and proc. Safe for
// concurrent use.
type Reader struct {
	cfg Config
	h   *cgroups.Hierarchy

	mu sync.Mutex
	// known holds what was inspected about each running container, by id; containers gone
	// from the runtime's list are dropped.
	known map[string]*known
	// devices caches block device names by "major:minor".
	devices map[string]string
}

type known struct {
	c        ContainerInfo
	group    cgroups.Group
	fsDevice string
	fsUsage  uint64
	fsAt     time.Time
}

// New detects the cgroup hierarchy; it fails where there is none to read.
func New(cfg Config) (*Reader, error) {
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/sys/fs/cgroup"
	}
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Cores == 0 {
		cfg.Cores = runtime.NumCPU()
	}
	if cfg.MaxListAge == 0 {
		cfg.MaxListAge = 2 * time.Second
	}
	if cfg.FSPeriod == 0 {
		cfg.FSPeriod = time.Minute
	}
	h, err := cgroups.Detect(cfg.CgroupRoot)
	if err != nil {
		return nil, err
	}
	return &Reader{cfg: cfg, h: h, known: map[string]*known{}, devices: map[string]string{}}, nil
}

// Node reads the machine: CPU from proc's stat, memory from meminfo, the network from the
// kubelet's own namespace.
func (r *Reader) Node() (Node, error) {
	n := Node{Time: r.cfg.Now(), Cores: r.cfg.Cores}
	var err error
	if n.CPU, err = cgroups.MachineCPU(r.cfg.ProcRoot); err != nil {
		return n, err
	}
	info, err := cgroups.Meminfo(r.cfg.ProcRoot)
	if err != nil {
		return n, err
	}
	n.Memory = cgroups.MachineMemory(info)
	if n.Net, err = cgroups.NetDev(r.cfg.ProcRoot, 0); err != nil {
		return n, err
	}
	return n, nil
}

// Snapshot reads the node and every running container of the node's pods, sorted by
// namespace, pod, pod uid and container. A container that exits while being read is left out.
func (r *Reader) Snapshot(ctx context.Context) (*Snapshot, error) {
	node, err := r.Node()
	if err != nil {
		return nil, fmt.Errorf("node usage: %w", err)
	}
	cs, err := r.containers(ctx)
	if err != nil {
		return nil, err
	}
	out := &Snapshot{Node: node, Containers: make([]Sample, 0, len(cs))}
	for _, k := range cs {
		s, err := r.read(k)
		if errors.Is(err, cgroups.ErrGone) || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("container %s of %s/%s: %w", k.c.Container, k.c.Namespace, k.c.Pod, err)
		}
		out.Containers = append(out.Containers, s)
	}
	sort.Slice(out.Containers, func(i, j int) bool {
		a, b := out.Containers[i], out.Containers[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		if a.PodUID != b.PodUID {
			return a.PodUID < b.PodUID
		}
		return a.Container < b.Container
	})
	return out, nil
}

// containers lists the node's running pod containers, inspecting those not seen before.
func (r *Reader) containers(ctx context.Context) ([]*known, error) {
	list, err := r.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []*known
	for _, c := range list {
		info, ok := spec.Parse(c.Labels)
		if !ok || c.State != rt.StateRunning {
			continue
		}
		seen[c.ID] = true
		k := r.known[c.ID]
		if k == nil {
			full, err := r.cfg.Runtime.Inspect(ctx, c.ID)
			if errors.Is(err, rt.ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if full.Pid == 0 {
				continue // not running any more
			}
			group, err := r.h.ForProcess(r.cfg.ProcRoot, full.Pid)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			name := info.Container
			if info.Sandbox {
				name = spec.SandboxName
			}
			k = &known{group: group, c: ContainerInfo{ID: c.ID, Name: full.Name, Image: full.Image,
				Namespace: info.Namespace, Pod: info.PodName, PodUID: info.PodUID, Container: name,
				Sandbox: info.Sandbox, Pid: full.Pid, Started: full.StartedAt, writableLayer: full.WritableLayer}}
			if full.WritableLayer != "" {
				var st unix.Stat_t
				if err := unix.Stat(full.WritableLayer, &st); err == nil {
					k.fsDevice = r.deviceNameLocked(uint64(unix.Major(st.Dev)), uint64(unix.Minor(st.Dev)))
				}
			}
			r.known[c.ID] = k
		}
		out = append(out, k)
	}
	for id := range r.known {
		if !seen[id] {
			delete(r.known, id)
		}
	}
	return out, nil
}

// list returns the node's containers: the recent list where there is one, else the runtime's.
func (r *Reader) list(ctx context.Context) ([]rt.Container, error) {
	if r.cfg.Listed != nil {
		if list, at := r.cfg.Listed(); !at.IsZero() && r.cfg.Now().Sub(at) < r.cfg.MaxListAge {
			mine := list[:0:0]
			for _, c := range list {
				if c.Labels[spec.LabelNode] == r.cfg.Node {
					mine = append(mine, c)
				}
			}
			return mine, nil
		}
	}
	return r.cfg.Runtime.List(ctx, map[string]string{spec.LabelNode: r.cfg.Node})
}

// read samples one container; the size of its writable layer is measured again once it is
// older than FSPeriod.
func (r *Reader) read(k *known) (Sample, error) {
	now := r.cfg.Now()
	st, err := k.group.Read()
	if err != nil {
		return Sample{}, err
	}
	s := Sample{ContainerInfo: k.c, Cgroup: k.group.Path, Time: now, Stats: st, FSDevice: k.fsDevice}
	r.mu.Lock()
	for _, d := range st.IO {
		s.IODevices = append(s.IODevices, r.deviceNameLocked(d.Major, d.Minor))
	}
	r.mu.Unlock()
	if k.c.Sandbox {
		if s.Net, err = cgroups.NetDev(r.cfg.ProcRoot, k.c.Pid); err != nil {
			return Sample{}, err
		}
	}
	if k.c.writableLayer != "" {
		s.FSUsage, s.FSKnown = r.layerSize(k, now), true
	}
	return s, nil
}

// layerSize is the size of k's writable layer, walked again once the last measure is older
// than FSPeriod; the walk runs without the lock.
func (r *Reader) layerSize(k *known, now time.Time) uint64 {
	r.mu.Lock()
	size, at := k.fsUsage, k.fsAt
	r.mu.Unlock()
	if now.Sub(at) < r.cfg.FSPeriod {
		return size
	}
	size = diskUsage(k.c.writableLayer)
	r.mu.Lock()
	k.fsUsage, k.fsAt = size, now
	r.mu.Unlock()
	return size
}

// deviceNameLocked names a block device as /dev/<name> from sys's uevent file, or as
// "major:minor" where that says nothing. Call with mu held.
func (r *Reader) deviceNameLocked(major, minor uint64) string {
	key := fmt.Sprintf("%d:%d", major, minor)
	if name, ok := r.devices[key]; ok {
		return name
	}
	name := key
	if b, err := os.ReadFile(filepath.Join(r.cfg.SysRoot, "dev", "block", key, "uevent")); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "DEVNAME="); ok && v != "" {
				name = "/dev/" + v
			}
		}
	}
	r.devices[key] = name
	return name
}

// diskUsage is the bytes of regular files under dir, as du counts apparent sizes; files
// that vanish while walking are skipped.
func diskUsage(dir string) uint64 {
	var total uint64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				total += uint64(info.Size())
			}
		}
		return nil
	})
	return total
}
