package cgroups

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// userHZ is the unit of cgroup v1's cpuacct.stat: clock ticks, 100 a second on Linux.
const userHZ = 100

// Hierarchy is the cgroup mount of a machine: the unified v2 tree, or the v1 controllers'
// trees side by side under one root.
type Hierarchy struct {
	root string
	v2   bool
	// dirs maps a v1 controller to its tree ("cpuacct" -> root/cpu,cpuacct).
	dirs map[string]string
}

// v1Controllers are the v1 trees read.
var v1Controllers = []string{"cpuacct", "memory", "pids", "blkio"}

// Detect looks at root (/sys/fs/cgroup): v2 when it has cgroup.controllers, else the v1
// controller trees below it. A hybrid machine (v1 controllers, an empty v2 tree at
// root/unified) is read as v1, where its controllers are.
func Detect(root string) (*Hierarchy, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return &Hierarchy{root: root, v2: true}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("cgroup root %s: %w", root, err)
	}
	h := &Hierarchy{root: root, dirs: map[string]string{}}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, c := range strings.Split(e.Name(), ",") {
			if _, taken := h.dirs[c]; !taken {
				h.dirs[c] = filepath.Join(root, e.Name())
			}
		}
	}
	if h.dirs["cpuacct"] == "" || h.dirs["memory"] == "" {
		return nil, fmt.Errorf("cgroup root %s: neither cgroup v2 nor the v1 cpuacct and memory controllers", root)
	}
	return h, nil
}

// V2 reports whether the machine uses the unified hierarchy.
func (h *Hierarchy) V2() bool { return h.v2 }

// Group is one control group: its path (as /proc/<pid>/cgroup names it) and where its files
// are for each controller.
type Group struct {
	// Path is the group's path from the hierarchy's root, "/" for the root; cAdvisor's `id`.
	Path string
	v2   bool
	dirs map[string]string // controller -> directory (v1); "" -> directory (v2)
}

// ForPath is the group at path in every controller's tree (Docker's cgroupfs driver puts a
// container at the same path in each).
func (h *Hierarchy) ForPath(path string) Group {
	path = "/" + strings.Trim(path, "/")
	g := Group{Path: path, v2: h.v2, dirs: map[string]string{}}
	if h.v2 {
		g.dirs[""] = filepath.Join(h.root, path)
		return g
	}
	for _, c := range v1Controllers {
		if d := h.dirs[c]; d != "" {
			g.dirs[c] = filepath.Join(d, path)
		}
	}
	return g
}

// ForProcess is the group of process pid, read from procRoot/<pid>/cgroup. It works for
// any cgroup driver, since the kernel says where the process is.
func (h *Hierarchy) ForProcess(procRoot string, pid int) (Group, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return Group{}, err
	}
	paths, unified, err := ParseProcCgroup(b)
	if err != nil {
		return Group{}, fmt.Errorf("cgroup of pid %d: %w", pid, err)
	}
	if h.v2 {
		if unified == "" {
			return Group{}, fmt.Errorf("cgroup of pid %d: no unified (0::) entry", pid)
		}
		return h.ForPath(unified), nil
	}
	g := Group{Path: paths["cpuacct"], dirs: map[string]string{}}
	for _, c := range v1Controllers {
		if d, p := h.dirs[c], paths[c]; d != "" && p != "" {
			g.dirs[c] = filepath.Join(d, p)
		}
	}
	if g.Path == "" {
		g.Path = paths["memory"]
	}
	if g.Path == "" {
		return Group{}, fmt.Errorf("cgroup of pid %d: no cpuacct or memory entry", pid)
	}
	return g, nil
}

// ParseProcCgroup reads /proc/<pid>/cgroup: the v1 paths by controller, and the unified
// (hierarchy 0, no controllers) path.
func ParseProcCgroup(b []byte) (v1 map[string]string, unified string, err error) {
	v1 = map[string]string{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, "", fmt.Errorf("malformed line %q", line)
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			v1[c] = parts[2]
		}
	}
	return v1, unified, nil
}

// CPU is cumulative CPU time in nanoseconds.
type CPU struct {
	UsageNanos, UserNanos, SystemNanos uint64
}

// Memory is a group's memory, in bytes. WorkingSet is Usage less inactive file pages, what
// the kubelet evicts on and reports; Limit is 0 when there is none.
type Memory struct {
	Usage, WorkingSet, RSS, Cache, Limit uint64
}

// IODevice is a block device's cumulative I/O by the group.
type IODevice struct {
	Major, Minor                         uint64
	ReadBytes, WriteBytes, Reads, Writes uint64
}

// Stats is one reading of a group.
type Stats struct {
	CPU    CPU
	Memory Memory
	// Tasks is the number of tasks (threads) in the group, from the pids controller.
	Tasks uint64
	IO    []IODevice
}

// ErrGone means the group's directory is not there (its container has exited).
var ErrGone = errors.New("cgroup is gone")

// Read reads the group's counters. CPU and memory must be there; tasks and I/O are left
// empty where the controller is not.
func (g Group) Read() (Stats, error) {
	if g.v2 {
		return g.readV2()
	}
	return g.readV1()
}

func (g Group) readV2() (Stats, error) {
	var s Stats
	dir := g.dirs[""]
	kv, err := readKeyed(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return s, gone(err)
	}
	s.CPU = CPU{UsageNanos: kv["usage_usec"] * 1000, UserNanos: kv["user_usec"] * 1000, SystemNanos: kv["system_usec"] * 1000}
	if g.Path == "/" {
		// The root has no memory.current; the machine's memory is in /proc/meminfo.
		return s, nil
	}
	usage, err := readUint(filepath.Join(dir, "memory.current"))
	if err != nil {
		return s, gone(err)
	}
	ms, err := readKeyed(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return s, gone(err)
	}
	s.Memory = Memory{Usage: usage, WorkingSet: sub(usage, ms["inactive_file"]), RSS: ms["anon"], Cache: ms["file"]}
	if lim, err := readUint(filepath.Join(dir, "memory.max")); err == nil {
		s.Memory.Limit = lim
	}
	if n, err := readUint(filepath.Join(dir, "pids.current")); err == nil {
		s.Tasks = n
	}
	if b, err := os.ReadFile(filepath.Join(dir, "io.stat")); err == nil {
		s.IO = parseIOStat(b)
	}
	return s, nil
}

func (g Group) readV1() (Stats, error) {
	var s Stats
	cpu := g.dirs["cpuacct"]
	usage, err := readUint(filepath.Join(cpu, "cpuacct.usage"))
	if err != nil {
		return s, gone(err)
	}
	s.CPU.UsageNanos = usage
	if kv, err := readKeyed(filepath.Join(cpu, "cpuacct.stat")); err == nil {
		s.CPU.UserNanos = kv["user"] * (1e9 / userHZ)
		s.CPU.SystemNanos = kv["system"] * (1e9 / userHZ)
	}
	mem := g.dirs["memory"]
	mu, err := readUint(filepath.Join(mem, "memory.usage_in_bytes"))
	if err != nil {
		return s, gone(err)
	}
	ms, err := readKeyed(filepath.Join(mem, "memory.stat"))
	if err != nil {
		return s, gone(err)
	}
	// The total_ figures count the group's children too, as usage_in_bytes does.
	s.Memory = Memory{Usage: mu, WorkingSet: sub(mu, ms["total_inactive_file"]), RSS: ms["total_rss"], Cache: ms["total_cache"]}
	if lim, err := readUint(filepath.Join(mem, "memory.limit_in_bytes")); err == nil {
		s.Memory.Limit = lim
	}
	if d := g.dirs["pids"]; d != "" {
		if n, err := readUint(filepath.Join(d, "pids.current")); err == nil {
			s.Tasks = n
		}
	}
	if d := g.dirs["blkio"]; d != "" {
		bytes, _ := os.ReadFile(filepath.Join(d, "blkio.throttle.io_service_bytes_recursive"))
		ios, _ := os.ReadFile(filepath.Join(d, "blkio.throttle.io_serviced_recursive"))
		s.IO = parseBlkio(bytes, ios)
	}
	return s, nil
}

// gone maps a missing file to ErrGone: the group went away between listing and reading.
func gone(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrGone, err)
	}
	return err
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// readUint reads a file holding one number; "max" (v2's no limit) and v1's huge
// page-rounded no-limit value read as 0.
func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if n >= 1<<62 {
		return 0, nil
	}
	return n, nil
}

// readKeyed reads "key value" lines (cpu.stat, memory.stat, cpuacct.stat).
func readKeyed(path string) (map[string]uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKeyed(b), nil
}

// ParseKeyed parses "key value" lines; lines that are not are skipped.
func ParseKeyed(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// parseIOStat parses v2's io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N wios=N ...".
func parseIOStat(b []byte) []IODevice {
	var out []IODevice
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		d, ok := parseDevice(fields[0])
		if !ok {
			continue
		}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				continue
			}
			switch k {
			case "rbytes":
				d.ReadBytes = n
			case "wbytes":
				d.WriteBytes = n
			case "rios":
				d.Reads = n
			case "wios":
				d.Writes = n
			}
		}
		out = append(out, d)
	}
	return out
}

// parseBlkio parses v1's blkio.throttle files: "MAJ:MIN Read|Write|... N" lines.
func parseBlkio(bytesFile, iosFile []byte) []IODevice {
	byDev := map[[2]uint64]*IODevice{}
	var order [][2]uint64
	add := func(b []byte, isBytes bool) {
		for line := range strings.Lines(string(b)) {
			fields := strings.Fields(line)
			if len(fields) != 3 {
				continue
			}
			d, ok := parseDevice(fields[0])
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(fields[2], 10, 64)
			if err != nil {
				continue
			}
			key := [2]uint64{d.Major, d.Minor}
			cur := byDev[key]
			if cur == nil {
				cur = &d
				byDev[key] = cur
				order = append(order, key)
			}
			switch {
			case fields[1] == "Read" && isBytes:
				cur.ReadBytes = n
			case fields[1] == "Write" && isBytes:
				cur.WriteBytes = n
			case fields[1] == "Read":
				cur.Reads = n
			case fields[1] == "Write":
				cur.Writes = n
			}
		}
	}
	add(bytesFile, true)
	add(iosFile, false)
	out := make([]IODevice, 0, len(order))
	for _, k := range order {
		out = append(out, *byDev[k])
	}
	return out
}

func parseDevice(s string) (IODevice, bool) {
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return IODevice{}, false
	}
	a, err1 := strconv.ParseUint(maj, 10, 64)
	b, err2 := strconv.ParseUint(min, 10, 64)
	if err1 != nil || err2 != nil {
		return IODevice{}, false
	}
	return IODevice{Major: a, Minor: b}, true
}
