package schedsuite

import (
	"fmt"
	"io"
	"slices"
	"time"

	"minik8s.io/bench/internal/stats"
)

// Summary is one node count over its rounds: the median of the scheduler phase's time over
// the baseline's, their range, and the median scheduler throughput.
type Summary struct {
	Nodes, Rounds             int
	MedianRatio               float64
	MinRatio, MaxRatio        float64
	MedianSchedulerPodsPerSec float64
	MedianBaselinePodsPerSec  float64
}

// Ratio is the scheduler phase's time over the baseline's; 0 when the baseline has none.
func (ph Phase) Ratio() float64 {
	if ph.Baseline.Elapsed <= 0 {
		return 0
	}
	return ph.Scheduler.Elapsed.Seconds() / ph.Baseline.Elapsed.Seconds()
}

// Summaries groups the phases by node count, in the order first met.
func (r *Report) Summaries() []Summary {
	var order []int
	by := map[int][]Phase{}
	for _, ph := range r.Phases {
		if _, ok := by[ph.Nodes]; !ok {
			order = append(order, ph.Nodes)
		}
		by[ph.Nodes] = append(by[ph.Nodes], ph)
	}
	out := make([]Summary, 0, len(order))
	for _, n := range order {
		phs := by[n]
		var ratios, sched, base []float64
		for _, ph := range phs {
			ratios = append(ratios, ph.Ratio())
			sched = append(sched, ph.Scheduler.PodsPerSecond())
			base = append(base, ph.Baseline.PodsPerSecond())
		}
		s := Summary{Nodes: n, Rounds: len(phs), MedianRatio: median(ratios), MedianSchedulerPodsPerSec: median(sched),
			MedianBaselinePodsPerSec: median(base)}
		s.MinRatio, s.MaxRatio = slices.Min(ratios), slices.Max(ratios)
		out = append(out, s)
	}
	return out
}

// median of xs (the mean of the middle two for an even count); xs is not changed.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Print writes the report as Markdown tables.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%d pods per run, %d creating clients, baseline binds with %d workers, %d round(s) per node count.\n\n",
		r.Config.Pods, r.Config.Clients, r.Config.BindWorkers, max(r.Config.Rounds, 1))
	fmt.Fprintln(w, "| Nodes | Round | Registration | System | Pods bound/s | p50 create→bound | p99 create→bound | Time |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, ph := range r.Phases {
		for _, row := range []struct {
			name string
			res  Result
		}{{"baseline (random node via binding API)", ph.Baseline}, {"scheduler", ph.Scheduler}} {
			fmt.Fprintf(w, "| %d | %d | %.1f s | %s | %.0f | %s | %s | %.2f s |\n", ph.Nodes, ph.Round, ph.Register.Seconds(), row.name,
				row.res.PodsPerSecond(), stats.Millis(row.res.Latency.P50), stats.Millis(row.res.Latency.P99), row.res.Elapsed.Seconds())
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Nodes | Rounds | Scheduler time / baseline time, median (range) | Overhead, median | Scheduler pods/s, median | ≥ 1000 pods/s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, s := range r.Summaries() {
		fmt.Fprintf(w, "| %d | %d | %.2f (%.2f–%.2f) | %+.0f%% (goal < 30%%) | %.0f | %v |\n", s.Nodes, s.Rounds, s.MedianRatio,
			s.MinRatio, s.MaxRatio, (s.MedianRatio-1)*100, s.MedianSchedulerPodsPerSec, s.MedianSchedulerPodsPerSec >= 1000)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CPU per pod bound, from the first create to the last binding seen (/proc):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Nodes | Round | System | apiserver (with etcd) | scheduler | hollow-node | RabbitMQ | bench | other | total |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	for _, ph := range r.Phases {
		for _, row := range []struct {
			name string
			c    CPUPerPod
		}{{"baseline", ph.Baseline.CPU}, {"scheduler", ph.Scheduler.CPU}} {
			fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", ph.Nodes, ph.Round, row.name, us(row.c.APIServer), us(row.c.Scheduler),
				us(row.c.Hollow), us(row.c.RabbitMQ), us(row.c.Bench), us(row.c.Rest), us(row.c.Total()))
		}
	}
}
