package podsuite

import (
	"fmt"
	"io"
	"time"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/bench/internal/suite"
)

// Goals of issue 3, for the paced test.
const (
	GoalP50Overhead = 0.30 // over the baseline's p50
	GoalP99         = 2 * time.Second
)

// Result is one test on one path.
type Result struct {
	Test string
	// Path is the baseline or the kubelet with its PLEG period.
	Path   string
	PLEG   time.Duration // zero for the baseline
	Phases Phases
	CPU    CPUPerPod
	HasCPU bool
}

// Report holds the figures of one run.
type Report struct {
	Machine                   suite.Machine
	Config                    Config
	KubeletCIDR, BaselineCIDR string
	// RunID names this run's node, namespace and containers.
	RunID   string
	Results []Result
}

func (r *Report) add(res Result) { r.Results = append(r.Results, res) }

func (r *Report) baseline(test string) (Result, bool) {
	for _, res := range r.Results {
		if res.Test == test && res.PLEG == 0 {
			return res, true
		}
	}
	return Result{}, false
}

// Goal is one target and whether the run met it.
type Goal struct {
	Name, Want, Got string
	Met             bool
}

// Goals checks every kubelet run of the paced test.
func (r *Report) Goals() []Goal {
	var gs []Goal
	for _, res := range r.Results {
		if res.PLEG == 0 || !res.HasCPU {
			continue
		}
		base, ok := r.baseline(res.Test)
		over := ratio(res.Phases.Total.P50, base.Phases.Total.P50) - 1
		gs = append(gs,
			Goal{Name: res.Path + ": p50 overhead over the baseline", Want: fmt.Sprintf("< %.0f%%", GoalP50Overhead*100),
				Got: fmt.Sprintf("%+.0f%%", over*100), Met: ok && base.Phases.Total.N > 0 && over < GoalP50Overhead},
			Goal{Name: res.Path + ": p99", Want: "< " + stats.Millis(GoalP99), Got: stats.Millis(res.Phases.Total.P99),
				Met: res.Phases.Total.N > 0 && res.Phases.Total.P99 < GoalP99})
	}
	return gs
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// Table is the latency figures, with the ratio to the baseline of the same test.
func (r *Report) Table() [][]string {
	rows := [][]string{{"test", "path", "n", "p50", "p90", "p99", "max", "p50 / baseline", "p99 / baseline"}}
	for _, res := range r.Results {
		t := res.Phases.Total
		r50, r99 := "", ""
		if base, ok := r.baseline(res.Test); ok && res.PLEG != 0 {
			r50 = fmt.Sprintf("%.2fx", ratio(t.P50, base.Phases.Total.P50))
			r99 = fmt.Sprintf("%.2fx", ratio(t.P99, base.Phases.Total.P99))
		}
		rows = append(rows, []string{res.Test, res.Path, fmt.Sprint(t.N), ms(t.P50), ms(t.P90), ms(t.P99), ms(t.Max), r50, r99})
	}
	return rows
}

// PhaseTable splits the startup: create (or the operation's start) to the
// sandbox running, sandbox to app running (CNI and the app container), app
// running to the watch seeing the pod Running (status reporting).
func (r *Report) PhaseTable() [][]string {
	rows := [][]string{{"test", "path", "start -> sandbox p50 / p99", "sandbox -> app p50 / p99", "app -> Running seen p50 / p99"}}
	pair := func(s stats.Summary) string {
		if s.N == 0 {
			return "-"
		}
		return ms(s.P50) + " / " + ms(s.P99)
	}
	for _, res := range r.Results {
		p := res.Phases
		run := pair(p.ToRunning)
		if res.PLEG == 0 {
			run = "0 (the start call returned)"
		}
		rows = append(rows, []string{res.Test, res.Path, pair(p.ToSandbox), pair(p.ToApp), run})
	}
	return rows
}

// CPUTable is the CPU per pod of the paced tests.
func (r *Report) CPUTable() [][]string {
	rows := [][]string{{"path", "apiserver", "kubelet (+CNI)", "bench (+CNI)", "dockerd+containerd", "other", "total"}}
	for _, res := range r.Results {
		if !res.HasCPU {
			continue
		}
		c := res.CPU
		rows = append(rows, []string{res.Path, ms(c.APIServer), ms(c.Kubelet), ms(c.Bench), ms(c.Docker), ms(c.Rest), ms(c.Total())})
	}
	return rows
}

// Print writes the machine and the tables in Markdown.
func (r *Report) Print(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "machine: %s, %d CPUs, %.1f GiB, Linux %s, %s, load average at start %s\n",
		m.CPU, m.CPUs, m.MemoryGB, m.Kernel, m.Go, m.LoadAvg)
	fmt.Fprintf(w, "pods: one container %s (sandbox %s), spec.nodeName set; kubelet pod CIDR %s, baseline %s\n",
		r.Config.Image, r.Config.Pause, r.KubeletCIDR, r.BaselineCIDR)
	fmt.Fprintf(w, "latency: kubelet = API create sent -> watch sees phase Running with every container ready; baseline = operation start -> app container's start call returned\n\n")
	suite.WriteMarkdown(w, r.Table())
	fmt.Fprintf(w, "\nWhere the time goes (sandbox and app times from Docker's start events for the kubelet):\n\n")
	suite.WriteMarkdown(w, r.PhaseTable())
	fmt.Fprintf(w, "\nCPU per pod in the paced test (other = shims, runc, the rest of the shared machine):\n\n")
	suite.WriteMarkdown(w, r.CPUTable())
	fmt.Fprintf(w, "\n")
	goals := [][]string{{"goal", "want", "got", "met"}}
	for _, g := range r.Goals() {
		met := "NO"
		if g.Met {
			met = "yes"
		}
		goals = append(goals, []string{g.Name, g.Want, g.Got, met})
	}
	suite.WriteMarkdown(w, goals)
}
