package metricsource

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"minik8s.io/shared/testwait"
)

// fakeKubelet serves /stats/summary for pods whose containers burn a fixed share of a core.
type fakeKubelet struct {
	start    time.Time
	mu       sync.Mutex
	pods     map[string]map[string]float64 // pod name -> container -> cores
	restarts map[string]time.Time          // pod/container -> counter reset at
	hits     atomic.Int64
	failing  atomic.Bool
	// nodeCores and nodeMemory, when set, are the node's own usage in the summary.
	nodeCores  float64
	nodeMemory uint64
}

func (k *fakeKubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer secret" {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	k.hits.Add(1)
	if k.failing.Load() {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	type ctr struct {
		Name string `json:"name"`
		CPU  struct {
			Time  time.Time `json:"time"`
			Usage uint64    `json:"usageCoreNanoSeconds"`
		} `json:"cpu"`
		Memory struct {
			WS uint64 `json:"workingSetBytes"`
		} `json:"memory"`
	}
	type pod struct {
		PodRef     map[string]string `json:"podRef"`
		Containers []ctr             `json:"containers"`
	}
	out := struct {
		Node map[string]any `json:"node"`
		Pods []pod          `json:"pods"`
	}{Node: map[string]any{"nodeName": "n1"}}
	if k.nodeCores > 0 {
		out.Node["cpu"] = map[string]any{"time": now, "usageCoreNanoSeconds": uint64(k.nodeCores * float64(now.Sub(k.start).Nanoseconds()))}
		out.Node["memory"] = map[string]any{"time": now, "workingSetBytes": k.nodeMemory}
	}
	for name, cs := range k.pods {
		p := pod{PodRef: map[string]string{"name": name, "namespace": "default", "uid": "uid-" + name}}
		for c, cores := range cs {
			since := k.start
			if t, ok := k.restarts[name+"/"+c]; ok {
				since = t
			}
			var x ctr
			x.Name = c
			x.CPU.Time = now
			x.CPU.Usage = uint64(cores * float64(now.Sub(since).Nanoseconds()))
			x.Memory.WS = 64 << 20
			p.Containers = append(p.Containers, x)
		}
		out.Pods = append(out.Pods, p)
	}
	_ = json.NewEncoder(w).Encode(out)
}

func startSource(t *testing.T, k *fakeKubelet, idle time.Duration) *Source {
	srv := httptest.NewServer(k)
	t.Cleanup(srv.Close)
	s := New(Config{HTTP: srv.Client(), Token: "secret", Resolution: 200 * time.Millisecond, FirstWindow: 200 * time.Millisecond,
		IdleAfter: idle, Targets: func(context.Context) ([]Target, error) { return []Target{{Node: "n1", URL: srv.URL}}, nil }})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = s.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func near(got, want int64) bool { return got >= want*8/10 && got <= want*12/10 }

func TestRatesFromCumulativeCPU(t *testing.T) {
	k := &fakeKubelet{start: time.Now().Add(-time.Hour), pods: map[string]map[string]float64{
		"web": {"app": 0.25, "side": 0.05}, "idle": {"app": 0},
	}, restarts: map[string]time.Time{}}
	s := startSource(t, k, time.Minute)
	// The first question waits for the two scrapes a rate needs.
	pods := s.Pods(t.Context())
	if len(pods) != 2 {
		t.Fatalf("want both pods on the first question, got %+v", pods)
	}
	if pods[0].Name != "idle" || pods[1].Name != "web" {
		t.Fatalf("pods not sorted by name: %+v", pods)
	}
	web := pods[1]
	if len(web.Containers) != 2 || !near(web.Containers[0].MilliCPU, 250) || !near(web.Containers[1].MilliCPU, 50) {
		t.Errorf("web's containers: want app ~250m, side ~50m, got %+v", web.Containers)
	}
	if web.Containers[0].MemoryBytes != 64<<20 || web.Window <= 0 || web.Timestamp.IsZero() {
		t.Errorf("web: memory, window or timestamp wrong: %+v", web)
	}
	if pods[0].Containers[0].MilliCPU != 0 {
		t.Errorf("idle pod uses no CPU, got %+v", pods[0])
	}
	nodes := s.Nodes(t.Context())
	if len(nodes) != 1 || !near(nodes[0].MilliCPU, 300) || nodes[0].MemoryBytes != 3*64<<20 {
		t.Errorf("node: want ~300m and 192Mi, got %+v", nodes)
	}

	// A restarted container's counter goes back: the pod has no rate for one scrape, never a
	// negative or huge one.
	k.mu.Lock()
	k.restarts["web/app"] = time.Now()
	k.mu.Unlock()
	sawGap := false
	testwait.For(t, "web measured again after its restart", func() bool {
		for _, p := range s.Pods(t.Context()) {
			if p.Name == "web" {
				if !near(p.Containers[0].MilliCPU, 250) {
					t.Fatalf("rate across a restart: %+v", p.Containers)
				}
				return sawGap
			}
		}
		sawGap = true
		return false
	})
}

func TestScrapesOnlyWhileAsked(t *testing.T) {
	k := &fakeKubelet{start: time.Now(), pods: map[string]map[string]float64{"web": {"app": 0.1}}, restarts: map[string]time.Time{}}
	s := startSource(t, k, time.Second)
	time.Sleep(500 * time.Millisecond)
	if n := k.hits.Load(); n != 0 {
		t.Fatalf("scraped %d times before anyone asked", n)
	}
	testwait.For(t, "metrics", func() bool { return len(s.Pods(t.Context())) == 1 })
	testwait.For(t, "scraping to stop", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return !s.scraping && len(s.nodes) == 0
	})
	n := k.hits.Load()
	time.Sleep(600 * time.Millisecond)
	if k.hits.Load() != n {
		t.Errorf("still scraping while idle")
	}
}

func TestUnreachableKubeletHasNoMetrics(t *testing.T) {
	s := New(Config{HTTP: http.DefaultClient, Token: "x", Resolution: 100 * time.Millisecond, Timeout: 200 * time.Millisecond,
		Targets: func(context.Context) ([]Target, error) {
			return []Target{{Node: "gone", URL: "http://127.0.0.1:1"}}, nil
		}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() { _ = s.Start(ctx) }()
	if p, n := s.Pods(t.Context()), s.Nodes(t.Context()); len(p) != 0 || len(n) != 0 {
		t.Errorf("want nothing from an unreachable kubelet, got %v %v", p, n)
	}
}

func TestMissedScrapesKeepTheLastUsageForAWhile(t *testing.T) {
	k := &fakeKubelet{start: time.Now().Add(-time.Hour), pods: map[string]map[string]float64{"web": {"app": 0.2}}, restarts: map[string]time.Time{}}
	s := startSource(t, k, time.Minute)
	if len(s.Pods(t.Context())) != 1 {
		t.Fatal("no metrics")
	}
	k.failing.Store(true)
	n := k.hits.Load()
	testwait.For(t, "a failed scrape", func() bool { return k.hits.Load() > n })
	if p := s.Pods(t.Context()); len(p) != 1 || !near(p[0].Containers[0].MilliCPU, 200) {
		t.Fatalf("one missed scrape lost the metrics: %+v", p)
	}
	// Resolution is 200 ms: after three of them without an answer the node is forgotten.
	testwait.For(t, "metrics of a silent kubelet to go", func() bool { return len(s.Pods(t.Context())) == 0 && len(s.Nodes(t.Context())) == 0 })
	k.failing.Store(false)
	testwait.For(t, "metrics back", func() bool { return len(s.Pods(t.Context())) == 1 })
}

// A kubelet that reports the node's own usage is believed over the sum of its pods: the
// machine runs more than pods.
func TestNodeOwnUsage(t *testing.T) {
	k := &fakeKubelet{start: time.Now().Add(-time.Hour), pods: map[string]map[string]float64{"web": {"app": 0.25}},
		restarts: map[string]time.Time{}, nodeCores: 1.5, nodeMemory: 2 << 30}
	s := startSource(t, k, time.Minute)
	nodes := s.Nodes(t.Context())
	if len(nodes) != 1 || !near(nodes[0].MilliCPU, 1500) || nodes[0].MemoryBytes != 2<<30 || nodes[0].Window <= 0 {
		t.Errorf("node: want ~1500m and 2Gi, its own usage, got %+v", nodes)
	}
}
