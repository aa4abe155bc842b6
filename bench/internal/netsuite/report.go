package netsuite

import (
	"fmt"
	"io"
	"time"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/bench/internal/suite"
)

// GoalOverhead is issue 11's goal: through the ClusterIP within 10 % of the pod IP, in
// connection latency and in throughput.
const GoalOverhead = 0.10

// Pair is one vantage point's figures straight to the pod IP and through the ClusterIP.
type Pair struct {
	From             string
	PodIP, ClusterIP stats.Summary
}

// DNSResult is one kind of query from the client pod.
type DNSResult struct {
	Query, Server string
	Summary       stats.Summary
	// Errors are queries that failed or timed out; they have no sample.
	Errors int
	// Baseline marks the query straight to the node's upstream resolver.
	Baseline bool
}

// Report holds the figures of one run.
type Report struct {
	Machine         suite.Machine
	Config          Config
	Node, Namespace string
	// PodAddr and ClusterAddr are the fileserver's pod IP and its Service's ClusterIP, with ports.
	PodAddr, ClusterAddr string
	// ServiceName is the Service's name in the cluster domain, OutsideName the name
	// forwarded to Upstream.
	ServiceName, OutsideName, Upstream string
	Latency, Transfer                  []Pair
	DNS                                []DNSResult
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// ms formats d in milliseconds to the microsecond: connections and queries here take
// tenths of a millisecond, where stats.Millis's two decimals would hide a 10 % difference.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func times(r float64) string { return fmt.Sprintf("%.2fx", r) }

// mbps is bytes per d in MB/s (10^6 bytes).
func mbps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / 1e6 / d.Seconds()
}

// LatencyTable is the connection latency per vantage point and target.
func (r *Report) LatencyTable() [][]string {
	rows := [][]string{{"from", "to", "n", "p50", "p90", "p99", "mean", "p50 / pod IP", "p99 / pod IP"}}
	for _, p := range r.Latency {
		rows = append(rows,
			[]string{p.From, "pod IP " + r.PodAddr, fmt.Sprint(p.PodIP.N), ms(p.PodIP.P50), ms(p.PodIP.P90),
				ms(p.PodIP.P99), ms(p.PodIP.Mean), "", ""},
			[]string{p.From, "ClusterIP " + r.ClusterAddr, fmt.Sprint(p.ClusterIP.N), ms(p.ClusterIP.P50), ms(p.ClusterIP.P90),
				ms(p.ClusterIP.P99), ms(p.ClusterIP.Mean), times(ratio(p.ClusterIP.P50, p.PodIP.P50)), times(ratio(p.ClusterIP.P99, p.PodIP.P99))})
	}
	return rows
}

// TransferTable is the throughput per vantage point and target: the median transfer and
// the slowest, in MB/s.
func (r *Report) TransferTable() [][]string {
	rows := [][]string{{"from", "to", "n", "median", "slowest", "median / pod IP"}}
	rate := func(d time.Duration) string { return fmt.Sprintf("%.0f MB/s", mbps(r.Config.LargeBytes, d)) }
	for _, p := range r.Transfer {
		rows = append(rows,
			[]string{p.From, "pod IP " + r.PodAddr, fmt.Sprint(p.PodIP.N), rate(p.PodIP.P50), rate(p.PodIP.Max), ""},
			[]string{p.From, "ClusterIP " + r.ClusterAddr, fmt.Sprint(p.ClusterIP.N), rate(p.ClusterIP.P50), rate(p.ClusterIP.Max),
				times(ratio(p.PodIP.P50, p.ClusterIP.P50))})
	}
	return rows
}

// DNSTable is the DNS latency per query, with the ratio to the upstream baseline.
func (r *Report) DNSTable() [][]string {
	rows := [][]string{{"query", "server", "n", "errors", "p50", "p90", "p99", "p50 / upstream", "p99 / upstream"}}
	var base stats.Summary
	for _, d := range r.DNS {
		if d.Baseline {
			base = d.Summary
		}
	}
	for _, d := range r.DNS {
		r50, r99 := "", ""
		if !d.Baseline && base.N > 0 {
			r50, r99 = times(ratio(d.Summary.P50, base.P50)), times(ratio(d.Summary.P99, base.P99))
		}
		s := d.Summary
		rows = append(rows, []string{d.Query, d.Server, fmt.Sprint(s.N), fmt.Sprint(d.Errors), ms(s.P50), ms(s.P90), ms(s.P99), r50, r99})
	}
	return rows
}

// Goal is one target and whether the run met it.
type Goal struct {
	Name, Want, Got string
	Met             bool
}

// Goals checks every vantage point: latency p50 and p99 through the ClusterIP at most 10 %
// above the pod IP's, median throughput at least 90 % of it.
func (r *Report) Goals() []Goal {
	var gs []Goal
	for _, p := range r.Latency {
		ok := p.PodIP.N > 0 && p.ClusterIP.N > 0
		for _, q := range []struct {
			name     string
			pod, cip time.Duration
		}{{"p50", p.PodIP.P50, p.ClusterIP.P50}, {"p99", p.PodIP.P99, p.ClusterIP.P99}} {
			got := ratio(q.cip, q.pod)
			gs = append(gs, Goal{Name: p.From + ": connection latency " + q.name + ", ClusterIP / pod IP", Want: "<= " + times(1+GoalOverhead),
				Got: times(got), Met: ok && got <= 1+GoalOverhead})
		}
	}
	for _, p := range r.Transfer {
		got := ratio(p.PodIP.P50, p.ClusterIP.P50)
		gs = append(gs, Goal{Name: p.From + ": median throughput, ClusterIP / pod IP", Want: ">= " + times(1-GoalOverhead),
			Got: times(got), Met: p.PodIP.N > 0 && p.ClusterIP.N > 0 && got >= 1-GoalOverhead})
	}
	return gs
}

// Print writes the setup, the tables and the goals in Markdown.
func (r *Report) Print(w io.Writer) {
	m := r.Machine
	c := r.Config
	fmt.Fprintf(w, "machine: %s, %d CPUs, %.1f GiB, Linux %s, %s, load average at start %s\n",
		m.CPU, m.CPUs, m.MemoryGB, m.Kernel, m.Go, m.LoadAvg)
	fmt.Fprintf(w, "cluster: node %s, namespace %s; fileserver pod %s, its Service %s (ClusterIP %s, one endpoint); a busybox client pod on the same node\n\n",
		r.Node, r.Namespace, r.PodAddr, r.ServiceName, r.ClusterAddr)
	fmt.Fprintf(w, "Connection latency: a new TCP connection and one GET of a %d-byte file, %d per target after %d unmeasured, the two targets alternating:\n\n",
		c.SmallBytes, c.Samples, c.Warmup)
	suite.WriteMarkdown(w, r.LatencyTable())
	fmt.Fprintf(w, "\nThroughput: a GET of a %d MiB file on a new connection, %d per target, alternating:\n\n", c.LargeBytes>>20, c.Transfers)
	suite.WriteMarkdown(w, r.TransferTable())
	if len(r.DNS) > 0 {
		fmt.Fprintf(w, "\nDNS from the client pod: A queries over UDP, one at a time from a new socket, %d per query after %d unmeasured, alternating; outside name %s, upstream %s:\n\n",
			c.Samples, c.Warmup, r.OutsideName, r.Upstream)
		suite.WriteMarkdown(w, r.DNSTable())
	}
	fmt.Fprintln(w)
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
