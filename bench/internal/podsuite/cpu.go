package podsuite

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc CPU times.
const clockTick = 10 * time.Millisecond

// CPUPerPod splits the CPU one pod's startup cost during a paced test.
type CPUPerPod struct {
	// APIServer is the apiserver process, etcd included.
	APIServer time.Duration
	// Kubelet includes the CNI plugins it ran (its reaped children).
	Kubelet time.Duration
	// Bench is this process and, in the baseline, the CNI plugins it ran.
	Bench time.Duration
	// Docker is dockerd and containerd.
	Docker time.Duration
	// Rest is everything else: container shims and runc, other work.
	Rest time.Duration
}

// Total is the sum of the parts.
func (c CPUPerPod) Total() time.Duration {
	return c.APIServer + c.Kubelet + c.Bench + c.Docker + c.Rest
}

type cpuSample struct {
	api, kubelet, self, docker, busy time.Duration
}

func (e *env) sampleCPU(kubeletPid int) cpuSample {
	var s cpuSample
	s.api, _ = processCPU(e.proc.Pid, false)
	if kubeletPid > 0 {
		s.kubelet, _ = processCPU(kubeletPid, true)
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			s.self += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	for _, pid := range e.dockerPids {
		if d, err := processCPU(pid, false); err == nil {
			s.docker += d
		}
	}
	s.busy, _ = machineBusy()
	return s
}

func perPod(from, to cpuSample, n int) CPUPerPod {
	if n <= 0 {
		return CPUPerPod{}
	}
	d := time.Duration(n)
	api, kl, self, dk := to.api-from.api, to.kubelet-from.kubelet, to.self-from.self, to.docker-from.docker
	return CPUPerPod{APIServer: api / d, Kubelet: kl / d, Bench: self / d, Docker: dk / d,
		Rest: max(to.busy-from.busy-api-kl-self-dk, 0) / d}
}

// findProcesses returns the pids whose command name is one of comms.
func findProcesses(comms ...string) []int {
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
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		for _, c := range comms {
			if strings.TrimSpace(string(b)) == c {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func processCPU(pid int, children bool) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(string(b), children)
}

// parseStat sums utime and stime (fields 14 and 15) and, with children, the
// reaped children's cutime and cstime (16 and 17). Fields count from the
// last ')' because the command name may hold spaces and parentheses.
func parseStat(stat string, children bool) (time.Duration, error) {
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
	return time.Duration(ticks) * clockTick, nil
}

// machineBusy is the non-idle time of all CPUs (user nice system irq softirq).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("malformed /proc/stat line %q", line)
	}
	var busy int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/stat line %q: %w", line, err)
		}
		busy += n
	}
	return time.Duration(busy) * clockTick, nil
}
