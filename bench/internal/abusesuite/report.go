package abusesuite

import (
	"fmt"
	"io"
	"time"

	"minik8s.io/bench/internal/stats"
)

func cores(p Phase, d time.Duration) string { return fmt.Sprintf("%.3f", p.Cores(d)) }

func starts(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := stats.Summarize(ds)
	return fmt.Sprintf("%s / %s (%d)", stats.Millis(s.P50), stats.Millis(s.Max), s.N)
}

// Print writes the storm's tables in Markdown.
func (r *StormReport) Print(w io.Writer) {
	fmt.Fprintf(w, "Node %s. The storm: %d pods whose command is missing from the image and %d whose container exits 1 at once, all created at the start of its window; its baseline for the creation burst: as many healthy pods created at once. Good pods: one every 5 s, those created in the first 15 s counted apart (during the burst).\n\n", r.Node, r.Pods, r.Pods)
	fmt.Fprintln(w, "| phase | window | kubelet + dockerd (cores) | kubelet | dockerd | containerd + shims | machine busy | good pod create → Running, p50 / max (n) | during the storm's creation burst | neighbour pod's failed requests |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "| %s | %.0f s | **%s** | %s | %s | %s | %s | %s | %s | %d of %d |\n", p.Name, p.Window.Seconds(),
			cores(p, p.Kubelet+p.Dockerd), cores(p, p.Kubelet), cores(p, p.Dockerd), cores(p, p.Engine), cores(p, p.Machine),
			starts(p.Starts), starts(p.BurstStarts), p.Failed, p.Asked)
	}
	if len(r.Phases) == 3 {
		q, h, s := r.Phases[0], r.Phases[1], r.Phases[2]
		qs, ss := stats.Summarize(q.Starts), stats.Summarize(s.Starts)
		hb, sb := stats.Summarize(h.BurstStarts), stats.Summarize(s.BurstStarts)
		if qs.P50 > 0 && hb.P50 > 0 {
			fmt.Fprintf(w, "\nGood pods during the storm: p50 %.2fx the quiet node's; during its creation burst %.2fx the healthy burst's. ",
				float64(ss.P50)/float64(qs.P50), float64(sb.P50)/float64(hb.P50))
		}
		fmt.Fprintf(w, "Failing pods: %d container attempts in all over the window, at most %d restarts for one pod (the back-off allows %d).\n",
			s.Attempts, s.MaxRestarts, s.AllowedRestarts)
	}
}

// Print writes the bad requests' table in Markdown.
func (r *RequestsReport) Print(w io.Writer) {
	fmt.Fprintf(w, "%d malformed writes per mode from %d clients, one in %d slow to send its body (a pause of 0.7 s after the headers, the body in two writes 0.1 s apart). Baseline: as many GETs of a namespace, sent the same way. Latency: first byte written to last byte read, of the requests not slow on purpose.\n\n",
		r.Requests, r.Clients, r.SlowEvery)
	fmt.Fprintln(w, "| connections | answered | without an answer | 5xx | answers | latency p50 / p99 | baseline p50 / p99 | ratio p50 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, m := range r.Modes {
		bad, base := stats.Summarize(m.Bad.Latencies), stats.Summarize(m.Baseline.Latencies)
		ratio := "-"
		if base.P50 > 0 {
			ratio = fmt.Sprintf("%.2fx", float64(bad.P50)/float64(base.P50))
		}
		fmt.Fprintf(w, "| %s (%d opened) | **%d of %d** | %d | %d | %s | %s / %s | %s / %s (%d of %d answered) | %s |\n",
			m.Name, m.Bad.Connections, m.Bad.Answered, m.Bad.Sent, len(m.Bad.Unanswered), m.Bad.ServerErrors(), m.Bad.Codes(),
			stats.Millis(bad.P50), stats.Millis(bad.P99), stats.Millis(base.P50), stats.Millis(base.P99), m.Baseline.Answered, m.Baseline.Sent, ratio)
	}
}
