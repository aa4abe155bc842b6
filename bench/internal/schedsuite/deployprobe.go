package schedsuite

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"minik8s.io/bench/internal/procstat"
	mclient "minik8s.io/shared/client"
)

// deployProbe splits each measurement of the deployments suite by process: CPU time, the
// apiserver's requests by verb and resource, and the controllers' and scheduler's syncs,
// queue adds and bus events; and takes a 1 s CPU profile of each process from the moment the
// last pod is seen created, which is the tail the two ways differ by.
type deployProbe struct {
	dir string
	api *mclient.Client
	// pids, pprof (base URL of /debug/pprof) and metrics (URL of /metrics) by process name.
	pids    map[string]int
	pprof   map[string]string
	metrics map[string]string
	log     *slog.Logger

	wg sync.WaitGroup
}

// DeployCost is what one measurement cost, from its first create to its last pod Ready.
type DeployCost struct {
	CPU map[string]time.Duration // by process
	// Counts are counter increments: "apiserver verb resource code", "<process> metric{labels}".
	Counts map[string]float64
}

// probedFamilies are the counters read from the scheduler's and controller-manager's /metrics.
var probedFamilies = []string{"minik8s_controller_sync_duration_seconds_count", "minik8s_workqueue_adds_total",
	"minik8s_informer_bus_events_total"}

type probeSample struct {
	cpu    map[string]time.Duration
	counts map[string]float64
}

func (p *deployProbe) sample(ctx context.Context) probeSample {
	s := probeSample{cpu: map[string]time.Duration{}, counts: map[string]float64{}}
	for name, pid := range p.pids {
		s.cpu[name] = procstat.Sum([]int{pid}, false)
	}
	if body, err := p.api.Get().AbsPath("/metrics").Do(ctx); err == nil {
		for k, v := range parseCounters(body, "apiserver_request_total") {
			s.counts["apiserver "+k] = v
		}
	} else {
		p.log.Warn("apiserver metrics", "err", err)
	}
	for name, url := range p.metrics {
		body, err := httpGet(ctx, url)
		if err != nil {
			p.log.Warn("metrics", "process", name, "err", err)
			continue
		}
		for k, v := range parseCounters(body, probedFamilies...) {
			s.counts[name+" "+k] = v
		}
	}
	return s
}

func (s probeSample) cost(to probeSample) DeployCost {
	c := DeployCost{CPU: map[string]time.Duration{}, Counts: map[string]float64{}}
	for k, v := range to.cpu {
		c.CPU[k] = v - s.cpu[k]
	}
	for k, v := range to.counts {
		if d := v - s.counts[k]; d != 0 {
			c.Counts[k] = d
		}
	}
	return c
}

// profile starts a CPU profile of seconds of every process, written as
// <label>-<process>.pprof.
func (p *deployProbe) profile(label string, seconds int) {
	for name, base := range p.pprof {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			profile(context.Background(), base+fmt.Sprintf("/profile?seconds=%d", seconds), filepath.Join(p.dir, label+"-"+name+".pprof"), p.log)
		}()
	}
}

// wait returns once the profiles under way are written, so the next step (deleting the
// namespace) stays out of them.
func (p *deployProbe) wait() { p.wg.Wait() }

func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// parseCounters reads the samples of the families named from Prometheus' text format, keyed
// by name and labels as they are written.
func parseCounters(text []byte, families ...string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		key := line[:i]
		name, _, _ := strings.Cut(key, "{")
		if !slices.Contains(families, name) {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[key] = v
		}
	}
	return out
}

// printCosts writes the median cost of each way over the rounds: CPU by process, then every
// count that moved.
func printCosts(w io.Writer, rounds []DeployRound) {
	var direct, deploy []DeployCost
	for _, r := range rounds {
		if r.DirectCost.CPU != nil {
			direct, deploy = append(direct, r.DirectCost), append(deploy, r.DeploymentCost)
		}
	}
	if len(direct) == 0 {
		return
	}
	fmt.Fprintf(w, "\nMedian cost of a measurement over %d rounds (first create to last pod Ready):\n\n", len(direct))
	fmt.Fprintln(w, "| | direct | Deployment |\n|---|---|---|")
	procs := map[string]bool{}
	keys := map[string]bool{}
	for _, c := range append(slices.Clone(direct), deploy...) {
		for k := range c.CPU {
			procs[k] = true
		}
		for k := range c.Counts {
			keys[k] = true
		}
	}
	med := func(cs []DeployCost, f func(DeployCost) float64) float64 {
		var xs []float64
		for _, c := range cs {
			xs = append(xs, f(c))
		}
		return median(xs)
	}
	for _, p := range slices.Sorted(maps.Keys(procs)) {
		f := func(c DeployCost) float64 { return c.CPU[p].Seconds() }
		fmt.Fprintf(w, "| CPU %s | %.2fs | %.2fs |\n", p, med(direct, f), med(deploy, f))
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		f := func(c DeployCost) float64 { return c.Counts[k] }
		fmt.Fprintf(w, "| %s | %.0f | %.0f |\n", strings.ReplaceAll(k, "|", "\\|"), med(direct, f), med(deploy, f))
	}
}
