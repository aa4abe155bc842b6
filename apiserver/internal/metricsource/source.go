package metricsource

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Target is a node's kubelet: its name and base URL (https://host:port).
type Target struct {
	Node string
	URL  string
}

// Config is what a Source needs.
type Config struct {
	// HTTP reaches kubelets; Token is the bearer token they are asked with.
	HTTP  *http.Client
	Token string
	// Targets lists the kubelets to scrape, asked before every round.
	Targets func(ctx context.Context) ([]Target, error)
	// Resolution is the time between scrapes while metrics are in use (10 s): the window a
	// CPU rate is measured over.
	Resolution time.Duration
	// FirstWindow is the time between the first two scrapes after a quiet time (2 s), so
	// the first CPU rates are there soon after someone asks.
	FirstWindow time.Duration
	// IdleAfter stops scraping when nobody asked for this long (5 min); what was measured is
	// then forgotten, so nothing stale is ever served.
	IdleAfter time.Duration
	// Timeout bounds one kubelet's answer (5 s).
	Timeout time.Duration
	// Concurrency is how many kubelets are scraped at once (16).
	Concurrency int
	Now         func() time.Time
	Logger      *slog.Logger
}

// ContainerUsage is one container's usage: CPU in millicores, memory in bytes.
type ContainerUsage struct {
	Name        string
	MilliCPU    int64
	MemoryBytes int64
}

// PodUsage is a pod's usage, per container; only pods with a CPU rate for each of their
// running containers are reported.
type PodUsage struct {
	Namespace, Name, UID string
	Node                 string
	// Timestamp is the newer sample's time, Window the time between the two samples.
	Timestamp  time.Time
	Window     time.Duration
	Containers []ContainerUsage
}

// NodeUsage is a node's usage: its own (CPU time and working set of the whole machine) where
// its kubelet reports that, else the sum of its pods'.
type NodeUsage struct {
	Name        string
	Timestamp   time.Time
	Window      time.Duration
	MilliCPU    int64
	MemoryBytes int64
}

// Source scrapes kubelets while metrics are asked for. Build with New, run Start.
type Source struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{}

	mu       sync.Mutex
	asked    time.Time        // when metrics were last asked for
	scraping bool             // the loop is in a round of scrapes
	nodes    map[string]*node // by node name
	rounds   int              // scrape rounds since the loop woke up
	roundC   chan struct{}    // closed at the end of each round
}

// node is what the last two scrapes of a kubelet said.
type node struct {
	prev    map[string]sample // podUID/container -> cumulative CPU at the previous scrape
	node    *sample           // the node's own cumulative CPU at the previous scrape
	pods    []PodUsage        // usage computed at the last scrape
	usage   *NodeUsage        // nil until two scrapes were made
	scraped time.Time
}

type sample struct {
	cpuNanos uint64
	at       time.Time
}

// New returns a Source; it starts nothing.
func New(cfg Config) *Source {
	if cfg.Resolution <= 0 {
		cfg.Resolution = 10 * time.Second
	}
	if cfg.FirstWindow <= 0 {
		cfg.FirstWindow = 2 * time.Second
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 5 * time.Minute
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Source{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), nodes: map[string]*node{}, roundC: make(chan struct{})}
}

// Start scrapes every Resolution while metrics are asked for, and sleeps otherwise, until
// ctx ends.
func (s *Source) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		}
		s.mu.Lock()
		s.scraping, s.rounds = true, 0
		s.mu.Unlock()
		for {
			s.Scrape(ctx)
			s.mu.Lock()
			idle := s.cfg.Now().Sub(s.asked) > s.cfg.IdleAfter
			if idle {
				s.scraping, s.nodes = false, map[string]*node{}
			}
			wait := s.cfg.Resolution
			if s.rounds == 1 {
				wait = s.cfg.FirstWindow
			}
			s.mu.Unlock()
			if idle {
				s.log.Info("metrics not asked for, scraping stopped", "idleAfter", s.cfg.IdleAfter)
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// ask records that metrics are wanted and wakes the loop when it sleeps. A question that
// finds the loop starting waits (within ctx, and at most FirstWindow plus two scrapes) for
// its first two rounds, so a first `kubectl top` already gets CPU rates.
func (s *Source) ask(ctx context.Context) {
	s.mu.Lock()
	s.asked = s.cfg.Now()
	cold := !s.scraping
	s.mu.Unlock()
	if cold {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	wait, cancel := context.WithTimeout(ctx, s.cfg.FirstWindow+2*s.cfg.Timeout+time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		done := s.scraping && s.rounds >= 2
		round := s.roundC
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-round:
		case <-wait.Done():
			return
		}
	}
}

// Pods returns the usage of every pod measured, sorted by namespace and name.
func (s *Source) Pods(ctx context.Context) []PodUsage {
	s.ask(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PodUsage
	for _, n := range s.nodes {
		out = append(out, n.pods...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Nodes returns the usage of every node measured twice, sorted by name.
func (s *Source) Nodes(ctx context.Context) []NodeUsage {
	s.ask(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []NodeUsage
	for _, n := range s.nodes {
		if n.usage != nil {
			out = append(out, *n.usage)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Scrape asks every kubelet once and updates the usage; what a kubelet that does not answer
// said last is served for three resolutions, then forgotten.
func (s *Source) Scrape(ctx context.Context) {
	targets, err := s.cfg.Targets(ctx)
	if err != nil {
		s.log.Warn("list kubelets to scrape", "err", err)
		targets = nil
	}
	type result struct {
		node string
		sum  *summary
		at   time.Time
	}
	results := make(chan result, len(targets))
	sem := make(chan struct{}, s.cfg.Concurrency)
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sum, err := s.fetch(ctx, t)
			if err != nil {
				s.log.Debug("scrape kubelet", "node", t.Node, "err", err)
			}
			results <- result{node: t.Node, sum: sum, at: s.cfg.Now()}
		}()
	}
	wg.Wait()
	close(results)
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for r := range results {
		seen[r.node] = true
		if r.sum == nil {
			// One missed scrape keeps what the node said last (the next success measures over
			// the longer window); a kubelet silent for three rounds has no metrics.
			if n := s.nodes[r.node]; n != nil && r.at.Sub(n.scraped) > 3*s.cfg.Resolution {
				delete(s.nodes, r.node)
			}
			continue
		}
		n := s.nodes[r.node]
		if n == nil {
			n = &node{}
			s.nodes[r.node] = n
		}
		n.update(r.node, r.sum, r.at)
	}
	for name := range s.nodes {
		if !seen[name] {
			delete(s.nodes, name)
		}
	}
	s.rounds++
	close(s.roundC)
	s.roundC = make(chan struct{})
}

// update computes the usage from this scrape and the previous one.
func (n *node) update(name string, sum *summary, at time.Time) {
	cur := map[string]sample{}
	n.pods = nil
	var cpu, mem int64
	var newest time.Time
	var window time.Duration
	for _, p := range sum.Pods {
		pu := PodUsage{Namespace: p.PodRef.Namespace, Name: p.PodRef.Name, UID: p.PodRef.UID, Node: name}
		complete := len(p.Containers) > 0
		for _, c := range p.Containers {
			key := p.PodRef.UID + "/" + c.Name
			t := c.CPU.Time
			if t.IsZero() {
				t = at
			}
			cur[key] = sample{cpuNanos: c.CPU.UsageCoreNanoSeconds, at: t}
			prev, ok := n.prev[key]
			// A container seen once has no rate yet; a counter that went back is a restart.
			if !ok || !t.After(prev.at) || c.CPU.UsageCoreNanoSeconds < prev.cpuNanos {
				complete = false
				continue
			}
			d := t.Sub(prev.at)
			milli := int64(float64(c.CPU.UsageCoreNanoSeconds-prev.cpuNanos) / float64(d.Nanoseconds()) * 1000)
			pu.Containers = append(pu.Containers, ContainerUsage{Name: c.Name, MilliCPU: milli, MemoryBytes: int64(c.Memory.WorkingSetBytes)})
			if t.After(pu.Timestamp) {
				pu.Timestamp = t
			}
			pu.Window = max(pu.Window, d)
		}
		if !complete {
			continue
		}
		sort.Slice(pu.Containers, func(i, j int) bool { return pu.Containers[i].Name < pu.Containers[j].Name })
		n.pods = append(n.pods, pu)
		for _, c := range pu.Containers {
			cpu += c.MilliCPU
			mem += c.MemoryBytes
		}
		if pu.Timestamp.After(newest) {
			newest = pu.Timestamp
		}
		window = max(window, pu.Window)
	}
	// The node's own figures, where the kubelet reports them, stand for it; until two of them
	// were read it has none. Without them, the node is its pods' sum.
	if own := sum.Node.CPU; own != nil && sum.Node.Memory != nil {
		t := own.Time
		if t.IsZero() {
			t = at
		}
		n.usage = nil
		if prev := n.node; prev != nil && t.After(prev.at) && own.UsageCoreNanoSeconds >= prev.cpuNanos {
			d := t.Sub(prev.at)
			n.usage = &NodeUsage{Name: name, Timestamp: t, Window: d,
				MilliCPU:    int64(float64(own.UsageCoreNanoSeconds-prev.cpuNanos) / float64(d.Nanoseconds()) * 1000),
				MemoryBytes: int64(sum.Node.Memory.WorkingSetBytes)}
		}
		n.node = &sample{cpuNanos: own.UsageCoreNanoSeconds, at: t}
	} else {
		n.node = nil
		if !n.scraped.IsZero() {
			if newest.IsZero() {
				newest, window = at, at.Sub(n.scraped)
			}
			n.usage = &NodeUsage{Name: name, Timestamp: newest, Window: window, MilliCPU: cpu, MemoryBytes: mem}
		}
	}
	n.prev, n.scraped = cur, at
}

// summary is the part of the kubelet's /stats/summary read here.
type summary struct {
	Node struct {
		NodeName string `json:"nodeName"`
		CPU      *struct {
			Time                 time.Time `json:"time"`
			UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
		} `json:"cpu"`
		Memory *struct {
			WorkingSetBytes uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	} `json:"node"`
	Pods []struct {
		PodRef struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
			UID       string `json:"uid"`
		} `json:"podRef"`
		Containers []struct {
			Name string `json:"name"`
			CPU  struct {
				Time                 time.Time `json:"time"`
				UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
			} `json:"cpu"`
			Memory struct {
				WorkingSetBytes uint64 `json:"workingSetBytes"`
			} `json:"memory"`
		} `json:"containers"`
	} `json:"pods"`
}

func (s *Source) fetch(ctx context.Context, t Target) (*summary, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(t.URL, "/")+"/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	resp, err := s.cfg.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("kubelet of %s answered %d: %s", t.Node, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	var sum summary
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&sum); err != nil {
		return nil, fmt.Errorf("decode summary of %s: %w", t.Node, err)
	}
	return &sum, nil
}
