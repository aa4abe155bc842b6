// Package procstat reads CPU times from /proc: per process (optionally with its reaped
// children) and for the whole machine. The benchmarks split each operation's cost by process
// with it, since on two cores where the CPU goes explains the figures better than latency.
package procstat

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClockTick is USER_HZ, the unit of /proc CPU times; 100 on every Linux architecture Go
// supports.
const ClockTick = 10 * time.Millisecond

// FindProcesses returns the pids whose command name is one of comms.
func FindProcesses(comms ...string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && slices.Contains(comms, strings.TrimSpace(string(b))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ProcessCPU is pid's user and system time, plus its reaped children's with children.
func ProcessCPU(pid int, children bool) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseStat(string(b), children)
}

// ParseStat sums utime and stime (fields 14 and 15) and, with children, the reaped
// children's cutime and cstime (16 and 17). Fields count from the last ')' because the
// command name may hold spaces and parentheses.
func ParseStat(stat string, children bool) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 15 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	last := 12
	if children {
		last = 14
	}
	var ticks int64
	for _, v := range f[11 : last+1] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed stat time %q: %w", v, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * ClockTick, nil
}

// MachineBusy is the non-idle time of all CPUs, from /proc/stat.
func MachineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return ParseCPULine(line)
}

// ParseCPULine sums the aggregate "cpu" line except idle and iowait.
func ParseCPULine(line string) (time.Duration, error) {
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, fmt.Errorf("malformed /proc/stat line %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		// user nice system idle iowait irq softirq steal guest guest_nice:
		// steal is other guests' time, and guest time is already in user.
		if i == 3 || i == 4 || i >= 7 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/stat line %q: %w", line, err)
		}
		busy += n
	}
	return time.Duration(busy) * ClockTick, nil
}

// Sum is the CPU of pids (see ProcessCPU); a process that is gone counts nothing.
func Sum(pids []int, children bool) time.Duration {
	var total time.Duration
	for _, pid := range pids {
		if d, err := ProcessCPU(pid, children); err == nil {
			total += d
		}
	}
	return total
}

// Self is this process's user and system time, plus its reaped children's with children.
func Self(children bool) time.Duration {
	who := []int{syscall.RUSAGE_SELF}
	if children {
		who = append(who, syscall.RUSAGE_CHILDREN)
	}
	var total time.Duration
	for _, w := range who {
		var ru syscall.Rusage
		if syscall.Getrusage(w, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// ProcessRSS is pid's resident memory (VmRSS of /proc/<pid>/status), in bytes.
func ProcessRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return ParseRSS(string(b))
}

// ParseRSS reads the VmRSS line (in kB) of a /proc/<pid>/status text.
func ParseRSS(status string) (uint64, error) {
	for line := range strings.Lines(status) {
		v, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed VmRSS line %q: %w", line, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no VmRSS line")
}
