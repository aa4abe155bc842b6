// Package monsuite measures what the monitoring stack (Prometheus and node-exporter, which
// make up installs) costs while the cluster is idle: the CPU its processes use over a window
// and their resident memory at its end, beside the apiserver and the kubelet over the same
// window as the baseline of what an idle control plane costs on the same machine.
package monsuite

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"minik8s.io/bench/internal/procstat"
)

// Config says how long to watch.
type Config struct {
	Window time.Duration
}

// Defaults are the flags' defaults: four of Prometheus' 30 s scrape rounds, plus a rule
// evaluation's worth.
var Defaults = Config{Window: 2 * time.Minute}

// Goals of the monitoring stack at rest.
const (
	GoalCores = 0.05
	GoalBytes = 300 << 20
)

// Group is some processes, found by command name.
type Group struct {
	Name  string
	Comms []string
	Pids  []int
	CPU   time.Duration // over the window
	RSS   uint64        // at the window's end
}

// Report is one window.
type Report struct {
	Window  time.Duration
	Stack   []Group // prometheus, node-exporter
	Control []Group // apiserver, kubelet: the baseline
	Machine time.Duration
}

// Run watches cfg.Window; the stack must be running (make up with monitoring on).
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Report, error) {
	rep := &Report{Window: cfg.Window,
		// The kernel keeps 15 characters of a command name: prometheus-node-exporter's is
		// prometheus-node.
		Stack:   []Group{{Name: "prometheus", Comms: []string{"prometheus"}}, {Name: "node-exporter", Comms: []string{"prometheus-node", "node_exporter"}}},
		Control: []Group{{Name: "apiserver", Comms: []string{"apiserver"}}, {Name: "kubelet", Comms: []string{"kubelet"}}},
	}
	all := func(f func(g *Group)) {
		for i := range rep.Stack {
			f(&rep.Stack[i])
		}
		for i := range rep.Control {
			f(&rep.Control[i])
		}
	}
	var missing []string
	all(func(g *Group) {
		g.Pids = procstat.FindProcesses(g.Comms...)
		if len(g.Pids) == 0 {
			missing = append(missing, g.Name)
		}
	})
	if len(missing) > 0 {
		return nil, fmt.Errorf("no %v process on this machine: the suite needs make up with the monitoring stack (MINIK8S_MONITORING unset)", missing)
	}
	start := map[string]time.Duration{}
	all(func(g *Group) { start[g.Name] = procstat.Sum(g.Pids, false) })
	m0, err := procstat.MachineBusy()
	if err != nil {
		return nil, err
	}
	log.Info("watching the idle monitoring stack", "window", cfg.Window)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(cfg.Window):
	}
	m1, err := procstat.MachineBusy()
	if err != nil {
		return nil, err
	}
	rep.Machine = m1 - m0
	all(func(g *Group) {
		g.CPU = procstat.Sum(g.Pids, false) - start[g.Name]
		for _, pid := range g.Pids {
			if rss, err := procstat.ProcessRSS(pid); err == nil {
				g.RSS += rss
			}
		}
	})
	return rep, nil
}

// cores is cpu spent over window, in cores.
func cores(cpu, window time.Duration) float64 { return cpu.Seconds() / window.Seconds() }

// Totals are the stack's CPU (cores) and memory.
func (r *Report) Totals() (float64, uint64) {
	var cpu time.Duration
	var rss uint64
	for _, g := range r.Stack {
		cpu += g.CPU
		rss += g.RSS
	}
	return cores(cpu, r.Window), rss
}

// Print writes the report as a Markdown table, with the goals.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "Idle for %s; CPU in cores over the window, memory resident at its end.\n\n", r.Window)
	fmt.Fprintln(w, "| processes | CPU (cores) | memory (MiB) |")
	fmt.Fprintln(w, "|---|---|---|")
	row := func(g Group) {
		fmt.Fprintf(w, "| %s | %.4f | %.0f |\n", g.Name, cores(g.CPU, r.Window), float64(g.RSS)/(1<<20))
	}
	for _, g := range r.Stack {
		row(g)
	}
	c, m := r.Totals()
	fmt.Fprintf(w, "| **monitoring stack** | **%.4f** | **%.0f** |\n", c, float64(m)/(1<<20))
	for _, g := range r.Control {
		row(g)
	}
	fmt.Fprintf(w, "| whole machine (busy) | %.4f | |\n\n", cores(r.Machine, r.Window))
	var ctl time.Duration
	for _, g := range r.Control {
		ctl += g.CPU
	}
	ratio := "n/a"
	if ctl > 0 {
		ratio = fmt.Sprintf("%.2fx", c/cores(ctl, r.Window))
	}
	fmt.Fprintf(w, "Goals: CPU under %.2f cores (%s), memory under %d MiB (%s). Stack against the idle apiserver and kubelet: %s.\n",
		GoalCores, met(c < GoalCores), GoalBytes>>20, met(m < GoalBytes), ratio)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
