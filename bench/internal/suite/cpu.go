package suite

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc CPU times; 100 on every Linux
// architecture Go supports.
const clockTick = 10 * time.Millisecond

// cpuSample is cumulative CPU time at one moment. On a 2-core machine the
// throughput test is CPU-bound, so where the CPU goes explains the figures
// better than any latency.
type cpuSample struct {
	server time.Duration // the apiserver process, embedded etcd included
	self   time.Duration // this process: the benchmark's clients
	broker time.Duration // RabbitMQ's Erlang VM, if it runs on this machine
	busy   time.Duration // every CPU of the machine, not idle
}

// brokerCommand is the process name of RabbitMQ's Erlang VM.
const brokerCommand = "beam.smp"

// CPUPerOp splits the CPU one operation cost.
type CPUPerOp struct {
	// Server is the apiserver process, which embeds etcd: in the raw etcd
	// rounds it is etcd alone.
	Server time.Duration
	// Client is the benchmark process.
	Client time.Duration
	// Broker is RabbitMQ, which receives every change the outbox publishes.
	Broker time.Duration
	// Rest is everything else that ran: other work sharing the machine.
	Rest time.Duration
}

func (e *env) sampleCPU() cpuSample {
	var s cpuSample
	s.server, _ = processCPU(e.proc.Pid)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, pid := range e.brokerPids {
		if d, err := processCPU(pid); err == nil {
			s.broker += d
		}
	}
	s.busy, _ = machineBusy()
	return s
}

// findProcesses returns the pids whose command name is comm.
func findProcesses(comm string) []int {
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
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(b)) == comm {
			pids = append(pids, pid)
		}
	}
	return pids
}

// perOp divides the CPU spent between two samples by ops.
func perOp(from, to cpuSample, ops int) CPUPerOp {
	if ops <= 0 {
		return CPUPerOp{}
	}
	n := time.Duration(ops)
	server, self, broker := to.server-from.server, to.self-from.self, to.broker-from.broker
	return CPUPerOp{Server: server / n, Client: self / n, Broker: broker / n, Rest: max(to.busy-from.busy-server-self-broker, 0) / n}
}

func (c CPUPerOp) add(o CPUPerOp) CPUPerOp {
	return CPUPerOp{Server: c.Server + o.Server, Client: c.Client + o.Client, Broker: c.Broker + o.Broker, Rest: c.Rest + o.Rest}
}

func (c CPUPerOp) div(n int) CPUPerOp {
	if n <= 0 {
		return CPUPerOp{}
	}
	d := time.Duration(n)
	return CPUPerOp{Server: c.Server / d, Client: c.Client / d, Broker: c.Broker / d, Rest: c.Rest / d}
}

// processCPU reads user+system time of pid from /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(string(b))
}

// parseStat extracts utime+stime (fields 14 and 15). The command name in
// field 2 may hold spaces and parentheses, so fields count from the last ')'.
func parseStat(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat %q", stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat times %q %q", f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// machineBusy reads the non-idle time of all CPUs from /proc/stat.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseCPULine(line)
}

// parseCPULine sums the aggregate "cpu" line except idle and iowait.
func parseCPULine(line string) (time.Duration, error) {
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
	return time.Duration(busy) * clockTick, nil
}
