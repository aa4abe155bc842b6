package schedsuite

import (
	"syscall"
	"time"

	"minik8s.io/bench/internal/procstat"
)

// CPUPerPod splits the machine's CPU over one measured phase, per pod bound.
type CPUPerPod struct {
	APIServer time.Duration // the apiserver process, etcd included
	Scheduler time.Duration // zero in the baseline, which runs none
	Hollow    time.Duration // the hollow-node process
	RabbitMQ  time.Duration // beam.smp
	Bench     time.Duration // this process: the creating clients, the watch, the baseline's binds
	Rest      time.Duration // everything else busy on the machine
}

// Total is the sum of the parts: the machine's busy time per pod.
func (c CPUPerPod) Total() time.Duration {
	return c.APIServer + c.Scheduler + c.Hollow + c.RabbitMQ + c.Bench + c.Rest
}

// procs are the processes a phase's CPU is split over; a zero pid is not sampled.
type procs struct {
	apiserver, scheduler, hollow int
	rabbit                       []int
}

type cpuSample struct {
	api, sched, hollow, rabbit, self, busy time.Duration
}

func (p procs) sample() cpuSample {
	var s cpuSample
	read := func(pid int) time.Duration {
		if pid <= 0 {
			return 0
		}
		d, _ := procstat.ProcessCPU(pid, false)
		return d
	}
	s.api, s.sched, s.hollow = read(p.apiserver), read(p.scheduler), read(p.hollow)
	for _, pid := range p.rabbit {
		s.rabbit += read(pid)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s.busy, _ = procstat.MachineBusy()
	return s
}

func perPod(from, to cpuSample, n int) CPUPerPod {
	if n <= 0 {
		return CPUPerPod{}
	}
	d := time.Duration(n)
	c := CPUPerPod{APIServer: (to.api - from.api) / d, Scheduler: (to.sched - from.sched) / d,
		Hollow: (to.hollow - from.hollow) / d, RabbitMQ: (to.rabbit - from.rabbit) / d, Bench: (to.self - from.self) / d}
	c.Rest = max((to.busy-from.busy)/d-c.Total(), 0)
	return c
}
