package schedsuite

import (
	"fmt"
	"io"

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
}
