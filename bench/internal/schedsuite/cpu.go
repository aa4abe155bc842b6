package schedsuite

import (
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

// procs are the processes a phase's CPU is split over.
type procs struct {
	apiserver, scheduler, hollow int
	rabbit                       []int
}

type cpuSample struct {
	api, sched, hollow, rabbit, self, busy time.Duration
}

func (p procs) sample() cpuSample {
	// A zero pid (no scheduler in the baseline) has no /proc entry, so it counts nothing.
	s := cpuSample{api: procstat.Sum([]int{p.apiserver}, false), sched: procstat.Sum([]int{p.scheduler}, false),
		hollow: procstat.Sum([]int{p.hollow}, false), rabbit: procstat.Sum(p.rabbit, false), self: procstat.Self(false)}
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
