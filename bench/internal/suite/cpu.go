package suite

import (
	"time"

	"minik8s.io/bench/internal/procstat"
)

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
	s.server, _ = procstat.ProcessCPU(e.proc.Pid, false)
	s.self = procstat.Self(false)
	s.broker = procstat.Sum(e.brokerPids, false)
	s.busy, _ = procstat.MachineBusy()
	return s
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
