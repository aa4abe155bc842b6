package schedsuite

import (
	"testing"
	"time"
)

func TestPerPodSplitsTheMachinesBusyTime(t *testing.T) {
	from := cpuSample{api: time.Second, sched: 0, hollow: time.Second, rabbit: 2 * time.Second, self: time.Second, busy: 10 * time.Second}
	to := cpuSample{api: 3 * time.Second, sched: time.Second, hollow: 2 * time.Second, rabbit: 3 * time.Second, self: 2 * time.Second, busy: 17 * time.Second}
	got := perPod(from, to, 1000)
	want := CPUPerPod{APIServer: 2 * time.Millisecond, Scheduler: time.Millisecond, Hollow: time.Millisecond,
		RabbitMQ: time.Millisecond, Bench: time.Millisecond, Rest: time.Millisecond}
	if got != want {
		t.Fatalf("perPod = %+v, want %+v", got, want)
	}
	if got.Total() != 7*time.Millisecond {
		t.Errorf("Total = %v, want the machine's 7ms per pod", got.Total())
	}
	// Processes sampled a moment after the machine can sum to more than it: other is then 0.
	to.busy = 12 * time.Second
	if got := perPod(from, to, 1000); got.Rest != 0 {
		t.Errorf("Rest = %v with less machine time than the processes', want 0", got.Rest)
	}
	if got := perPod(from, to, 0); got != (CPUPerPod{}) {
		t.Errorf("perPod over no pods = %+v, want zero", got)
	}
}
