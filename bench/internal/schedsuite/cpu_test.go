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

func TestSummariesTakeTheMedianRoundPerNodeCount(t *testing.T) {
	phase := func(nodes, round int, base, sched time.Duration) Phase {
		return Phase{Nodes: nodes, Round: round,
			Baseline:  Result{Pods: 10000, Elapsed: base},
			Scheduler: Result{Pods: 10000, Elapsed: sched}}
	}
	r := &Report{Phases: []Phase{
		phase(1000, 1, 10*time.Second, 14*time.Second), // 1.4
		phase(1000, 2, 10*time.Second, 12*time.Second), // 1.2
		phase(1000, 3, 8*time.Second, 10*time.Second),  // 1.25
		phase(5000, 1, 10*time.Second, 11*time.Second), // 1.1
		phase(5000, 2, 10*time.Second, 13*time.Second), // 1.3
	}}
	got := r.Summaries()
	if len(got) != 2 || got[0].Nodes != 1000 || got[1].Nodes != 5000 {
		t.Fatalf("summaries %+v, want 1000 then 5000", got)
	}
	near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
	if s := got[0]; s.Rounds != 3 || !near(s.MedianRatio, 1.25) || !near(s.MinRatio, 1.2) || !near(s.MaxRatio, 1.4) ||
		!near(s.MedianSchedulerPodsPerSec, 10000.0/12) {
		t.Errorf("1000 nodes: %+v, want 3 rounds, median 1.25 in 1.2-1.4, median 833 pods/s", s)
	}
	if s := got[1]; s.Rounds != 2 || !near(s.MedianRatio, 1.2) {
		t.Errorf("5000 nodes: %+v, want the mean of the middle two, 1.2", s)
	}
}
