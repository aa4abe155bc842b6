package podsuite

import (
	"time"

	"minik8s.io/bench/internal/procstat"
)

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
	s.api, _ = procstat.ProcessCPU(e.proc.Pid, false)
	if kubeletPid > 0 {
		s.kubelet, _ = procstat.ProcessCPU(kubeletPid, true)
	}
	s.self = procstat.Self(true)
	s.docker = procstat.Sum(e.dockerPids, false)
	s.busy, _ = procstat.MachineBusy()
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
