package schedsuite

import (
	"fmt"
	"io"
	"time"

	"minik8s.io/bench/internal/stats"
)

// Print writes the report as Markdown tables.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%d pods per run, %d creating clients, baseline binds with %d workers.\n\n",
		r.Config.Pods, r.Config.Clients, r.Config.BindWorkers)
	fmt.Fprintln(w, "| Nodes | Registration | System | Pods bound/s | p50 create→bound | p99 create→bound | Time |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, ph := range r.Phases {
		for _, row := range []struct {
			name string
			res  Result
		}{{"baseline (random node via binding API)", ph.Baseline}, {"scheduler", ph.Scheduler}} {
			fmt.Fprintf(w, "| %d | %.1f s | %s | %.0f | %s | %s | %.2f s |\n", ph.Nodes, ph.Register.Seconds(), row.name,
				row.res.PodsPerSecond(), stats.Millis(row.res.Latency.P50), stats.Millis(row.res.Latency.P99), row.res.Elapsed.Seconds())
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Nodes | Scheduler time / baseline time | Overhead | ≥ 1000 pods/s |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, ph := range r.Phases {
		ratio := 0.0
		if ph.Baseline.Elapsed > 0 {
			ratio = ph.Scheduler.Elapsed.Seconds() / ph.Baseline.Elapsed.Seconds()
		}
		fmt.Fprintf(w, "| %d | %.2f | %+.0f%% (goal < 30%%) | %v |\n", ph.Nodes, ratio, (ratio-1)*100, ph.Scheduler.PodsPerSecond() >= 1000)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "CPU per pod bound, from the first create to the last binding seen (/proc):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| Nodes | System | apiserver (with etcd) | scheduler | hollow-node | RabbitMQ | bench | other | total |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	us := func(d time.Duration) string { return fmt.Sprintf("%d µs", d.Microseconds()) }
	for _, ph := range r.Phases {
		for _, row := range []struct {
			name string
			c    CPUPerPod
		}{{"baseline", ph.Baseline.CPU}, {"scheduler", ph.Scheduler.CPU}} {
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", ph.Nodes, row.name, us(row.c.APIServer), us(row.c.Scheduler),
				us(row.c.Hollow), us(row.c.RabbitMQ), us(row.c.Bench), us(row.c.Rest), us(row.c.Total()))
		}
	}
}
