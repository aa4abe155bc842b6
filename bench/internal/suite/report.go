package suite

import (
	"fmt"
	"io"
	"strings"
	"time"

	"minik8s.io/bench/internal/stats"
)

// Goals the control plane is held to.
const (
	GoalCreateP99      = 10 * time.Millisecond
	GoalThroughputPart = 0.5 // of raw etcd puts/s
	GoalEventP99       = 20 * time.Millisecond
)

// Report holds the figures of one run.
type Report struct {
	Machine Machine
	Config  Config
	// ValueBytes is the size of one stored ConfigMap, the baseline's value.
	ValueBytes int

	CreateAPI, CreateEtcd stats.Summary

	// Throughput in creates (puts) per second; ThroughputOps counts them
	// (API, etcd).
	ThroughputAPI, ThroughputEtcd float64
	ThroughputOps                 [2]int
	// ThroughputCPU is the CPU time one create (put) cost in the throughput
	// test, (API, etcd), averaged over rounds.
	ThroughputCPU [2]CPUPerOp

	// EventsSent creates were made at EventRate per second; EventBus and
	// EventWatch time them from send to receipt.
	EventsSent           int
	EventRate            float64
	EventBus, EventWatch stats.Summary
	// EventBusWindows and EventWatchWindows are the same by send time, in
	// equal slices of the test.
	EventBusWindows, EventWatchWindows []stats.Summary
	// OutboxPublished changes were published during the event test, with
	// the outbox's own latency from watch receipt to broker confirm at these
	// percentiles: upper bounds of the apiserver's histogram buckets.
	OutboxPublished      int
	OutboxP50, OutboxP99 time.Duration

	Profiles []ProfileResult

	// Extensions is tests 4 to 6, nil unless Config.Extensions.
	Extensions *ExtensionsReport
}

// Goal is one target and whether the run met it.
type Goal struct {
	Name string
	Want string
	Got  string
	Met  bool
}

// Goals checks the run against the targets. Events that never arrived fail
// the event goal whatever the latency of the rest.
func (r *Report) Goals() []Goal {
	part := ratio(r.ThroughputAPI, r.ThroughputEtcd)
	return []Goal{
		{Name: "create latency p99", Want: "< " + stats.Millis(GoalCreateP99), Got: stats.Millis(r.CreateAPI.P99),
			Met: r.CreateAPI.N > 0 && r.CreateAPI.P99 < GoalCreateP99},
		{Name: "throughput vs raw etcd", Want: fmt.Sprintf(">= %.2fx", GoalThroughputPart), Got: fmt.Sprintf("%.2fx", part),
			Met: part >= GoalThroughputPart},
		{Name: "event latency p99", Want: "< " + stats.Millis(GoalEventP99), Got: stats.Millis(r.EventBus.P99),
			Met: r.EventsSent > 0 && r.EventBus.N == r.EventsSent && r.EventBus.P99 < GoalEventP99},
	}
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func durRatio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// p99s lists the p99 of each window in milliseconds.
func p99s(ws []stats.Summary) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = fmt.Sprintf("%.0f", float64(w.P99)/float64(time.Millisecond))
	}
	return strings.Join(parts, " / ") + " ms"
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// Table is the figures as rows under a header; Print renders it.
func (r *Report) Table() [][]string {
	g := r.Goals()
	c := r.Config
	lat := fmt.Sprintf("1 create latency, 1 client, n=%d", r.CreateAPI.N)
	tp := fmt.Sprintf("2 throughput, %d clients", c.Clients)
	ev := fmt.Sprintf("3 event latency, %.0f/s for %s", r.EventRate, c.EventTime)
	return [][]string{
		{"test", "figure", "minik8s", "raw etcd", "ratio", "goal", "met"},
		{lat, "p50", stats.Millis(r.CreateAPI.P50), stats.Millis(r.CreateEtcd.P50), durRatio(r.CreateAPI.P50, r.CreateEtcd.P50), "", ""},
		{lat, "p99", stats.Millis(r.CreateAPI.P99), stats.Millis(r.CreateEtcd.P99), durRatio(r.CreateAPI.P99, r.CreateEtcd.P99), g[0].Want, yesNo(g[0].Met)},
		{lat, "mean", stats.Millis(r.CreateAPI.Mean), stats.Millis(r.CreateEtcd.Mean), durRatio(r.CreateAPI.Mean, r.CreateEtcd.Mean), "", ""},
		{tp, "creates/s", fmt.Sprintf("%.0f /s", r.ThroughputAPI), fmt.Sprintf("%.0f /s", r.ThroughputEtcd),
			fmt.Sprintf("%.2fx", ratio(r.ThroughputAPI, r.ThroughputEtcd)), g[1].Want, yesNo(g[1].Met)},
		{ev, "p50", stats.Millis(r.EventBus.P50), stats.Millis(r.EventWatch.P50), durRatio(r.EventBus.P50, r.EventWatch.P50), "", ""},
		{ev, "p99", stats.Millis(r.EventBus.P99), stats.Millis(r.EventWatch.P99), durRatio(r.EventBus.P99, r.EventWatch.P99), g[2].Want, yesNo(g[2].Met)},
		{ev, "p99 by quarter of the test", p99s(r.EventBusWindows), p99s(r.EventWatchWindows), "", "", ""},
		{ev, "outbox watch->confirm p50/p99", "<= " + stats.Millis(r.OutboxP50) + " / <= " + stats.Millis(r.OutboxP99), "", "", "", ""},
		{ev, "received", fmt.Sprintf("%d/%d", r.EventBus.N, r.EventsSent), fmt.Sprintf("%d/%d", r.EventWatch.N, r.EventsSent), "", "all", yesNo(r.EventsSent > 0 && r.EventBus.N == r.EventsSent)},
	}
}

// Print writes the machine, the figures as a Markdown table (so a run can be
// pasted into docs/benchmarks.md as is) and any profiles.
func (r *Report) Print(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "machine: %s, %d CPUs, %.1f GiB, Linux %s, %s, load average at start %s\n",
		m.CPU, m.CPUs, m.MemoryGB, m.Kernel, m.Go, m.LoadAvg)
	fmt.Fprintf(w, "object: ConfigMap with a %d-byte value, %d bytes as stored; minik8s = HTTPS + bearer token through the apiserver; raw etcd = a create transaction of the same bytes on the same embedded etcd\n",
		r.Config.PayloadBytes, r.ValueBytes)
	fmt.Fprintf(w, "access: %s\n", describeAccess(r.Config))
	fmt.Fprintf(w, "events: minik8s = send -> apiserver -> etcd -> outbox -> RabbitMQ -> consumer; raw etcd = send -> apiserver -> etcd -> etcd watch\n\n")
	WriteMarkdown(w, r.Table())
	api, raw := r.ThroughputCPU[0], r.ThroughputCPU[1]
	fmt.Fprintf(w, "\nCPU per write in the throughput test (apiserver = its process, embedded etcd included; other = the rest of the shared machine):\n\n")
	writeCPUTable(w, []cpuPath{{"minik8s create", api}, {"raw etcd put", raw}})
	if r.Extensions != nil {
		fmt.Fprintln(w)
		r.Extensions.Print(w, r.Config.Clients)
	}
	for _, p := range r.Profiles {
		fmt.Fprintf(w, "\napiserver CPU profile during the %s test (%s):\n%s", p.Name, p.Path, p.Top)
	}
}

// cpuPath is one row of a CPU table: a way of writing and what one write cost.
type cpuPath struct {
	name string
	cpu  CPUPerOp
}

// writeCPUTable writes the CPU per operation of each path.
func writeCPUTable(w io.Writer, paths []cpuPath) {
	total := func(c CPUPerOp) time.Duration { return c.Server + c.Client + c.Broker + c.Rest }
	rows := [][]string{{"path", "apiserver", "bench clients", "RabbitMQ", "other", "total"}}
	for _, p := range paths {
		c := p.cpu
		rows = append(rows, []string{p.name, micros(c.Server), micros(c.Client), micros(c.Broker), micros(c.Rest), micros(total(c))})
	}
	WriteMarkdown(w, rows)
}

// WriteMarkdown writes rows (the first is the header) as a Markdown table, padding cells so
// it reads well as plain text too; widths count runes, so arrows and the like line up.
func WriteMarkdown(w io.Writer, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			width[i] = max(width[i], len([]rune(cell)))
		}
	}
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, cell := range cells {
			fmt.Fprintf(&b, " %s%s |", cell, strings.Repeat(" ", width[i]-len([]rune(cell))))
		}
		fmt.Fprintln(w, b.String())
	}
	line(rows[0])
	sep := make([]string, len(width))
	for i, n := range width {
		sep[i] = strings.Repeat("-", n)
	}
	line(sep)
	for _, row := range rows[1:] {
		line(row)
	}
}
