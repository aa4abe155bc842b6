package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Interface is one network interface's cumulative counters.
type Interface struct {
	Name                                    string
	RxBytes, RxPackets, RxErrors, RxDropped uint64
	TxBytes, TxPackets, TxErrors, TxDropped uint64
}

// NetDev reads the interfaces of the network namespace that procRoot/<pid> is in (pid 0:
// the caller's own, procRoot/net/dev), without the loopback.
func NetDev(procRoot string, pid int) ([]Interface, error) {
	path := filepath.Join(procRoot, "net", "dev")
	if pid > 0 {
		path = filepath.Join(procRoot, strconv.Itoa(pid), "net", "dev")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, gone(err)
	}
	return ParseNetDev(b)
}

// ParseNetDev parses /proc/net/dev, skipping lo: two header lines, then
// "name: rx bytes packets errs drop fifo frame compressed multicast tx bytes packets errs drop ...".
func ParseNetDev(b []byte) ([]Interface, error) {
	var out []Interface
	for line := range strings.Lines(string(b)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		name = strings.TrimSpace(name)
		if name == "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 16 {
			return nil, fmt.Errorf("net/dev: interface %s has %d fields, want 16", name, len(f))
		}
		n := make([]uint64, 16)
		for i := range n {
			v, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("net/dev: interface %s: %w", name, err)
			}
			n[i] = v
		}
		out = append(out, Interface{Name: name,
			RxBytes: n[0], RxPackets: n[1], RxErrors: n[2], RxDropped: n[3],
			TxBytes: n[8], TxPackets: n[9], TxErrors: n[10], TxDropped: n[11]})
	}
	return out, nil
}

// MachineCPU reads the machine's CPU time from procRoot/stat's "cpu" line: busy time (all
// but idle and iowait) as usage, user+nice as user, system+irq+softirq as system. Guest
// time is already inside user and nice.
func MachineCPU(procRoot string) (CPU, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "stat"))
	if err != nil {
		return CPU{}, err
	}
	return ParseStat(b)
}

// ParseStat parses the "cpu" line of /proc/stat.
func ParseStat(b []byte) (CPU, error) {
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] != "cpu" {
			continue
		}
		var t [8]uint64 // user nice system idle iowait irq softirq steal
		for i := range t {
			v, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return CPU{}, fmt.Errorf("stat: cpu field %d: %w", i+1, err)
			}
			t[i] = v * (1e9 / userHZ)
		}
		user := t[0] + t[1]
		system := t[2] + t[5] + t[6]
		return CPU{UsageNanos: user + system + t[7], UserNanos: user, SystemNanos: system}, nil
	}
	return CPU{}, fmt.Errorf("stat: no cpu line")
}

// Meminfo reads procRoot/meminfo in bytes, by field name ("MemTotal", "Inactive(file)").
func Meminfo(procRoot string) (map[string]uint64, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, "meminfo"))
	if err != nil {
		return nil, err
	}
	return ParseMeminfo(b), nil
}

// ParseMeminfo parses /proc/meminfo, "Name:   N kB" lines, into bytes.
func ParseMeminfo(b []byte) map[string]uint64 {
	out := map[string]uint64{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out
}

// MachineMemory is the machine's memory as the kubelet counts a node's: usage is all but
// free, the working set is usage less inactive file pages.
func MachineMemory(info map[string]uint64) Memory {
	total := info["MemTotal"]
	usage := sub(total, info["MemFree"])
	cache := info["Cached"] + info["Buffers"]
	return Memory{Usage: usage, WorkingSet: sub(usage, info["Inactive(file)"]), RSS: sub(usage, cache), Cache: cache, Limit: total}
}
