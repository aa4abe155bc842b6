package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"minik8s.io/kubelet/internal/cgroups"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/fake"
	"minik8s.io/kubelet/internal/stats"
	"minik8s.io/shared/workqueue/clock"
)

type containers struct {
	current, previous string
}

func (c containers) ContainerID(_ context.Context, ns, pod, ctr string, previous bool) (string, error) {
	if ns != "default" || pod != "web" || ctr != "app" {
		return "", fmt.Errorf("pod %s/%s container %s: %w", ns, pod, ctr, runtime.ErrNotFound)
	}
	if previous {
		if c.previous == "" {
			return "", runtime.ErrNotFound
		}
		return c.previous, nil
	}
	return c.current, nil
}

func (containers) SandboxID(context.Context, string, string) (string, error) {
	return "", runtime.ErrNotFound
}

func (c containers) PodContainers(context.Context) ([]PodRef, error) {
	return []PodRef{{Namespace: "default", Name: "web", UID: "u1", Containers: map[string]string{"app": c.current}}}, nil
}

// tokens are the identities setup's server accepts: "good" is any user, "serverless" and
// "admin" may load images.
var tokens = map[string]Identity{
	"good":       {User: "alice", Groups: []string{"system:authenticated"}},
	"serverless": {User: "system:serverless", Groups: []string{"system:authenticated"}},
	"admin":      {User: "admin", Groups: []string{"system:masters", "system:authenticated"}},
}

func setup(t *testing.T) (*httptest.Server, *fake.Runtime, string, *atomic.Int32) {
	t.Helper()
	rt := fake.New(clock.Real{})
	rt.AddImage("img")
	ctx := context.Background()
	id, err := rt.Create(ctx, runtime.ContainerConfig{Name: "app", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		if err := rt.WriteLog(id, "stdout", line); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.SetStats(id, runtime.Stats{Timestamp: time.Now(), CPUUsageNanos: 5e9, MemoryWorkingSetBytes: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	reviews := &atomic.Int32{}
	s := New(Config{Node: "n1", Runtime: rt, Containers: containers{current: id},
		Review: func(_ context.Context, token string) (Identity, bool, error) {
			reviews.Add(1)
			return tokens[token], tokens[token].User != "", nil
		}})
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs, rt, id, reviews
}

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLogsAuthAndOptions(t *testing.T) {
	hs, _, _, reviews := setup(t)
	base := hs.URL + "/containerLogs/default/web/app"
	if code, _ := get(t, base, ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := get(t, base, "bad"); code != 401 {
		t.Fatalf("bad token: %d", code)
	}
	code, body := get(t, base, "good")
	if code != 200 || body != "one\ntwo\nthree\n" {
		t.Fatalf("logs: %d %q", code, body)
	}
	if _, body := get(t, base+"?tailLines=1", "good"); body != "three\n" {
		t.Fatalf("tail: %q", body)
	}
	if _, body := get(t, base+"?limitBytes=5", "good"); body != "one\nt" {
		t.Fatalf("limitBytes: %q", body)
	}
	if code, _ := get(t, base+"?tailLines=x", "good"); code != 400 {
		t.Fatalf("bad tailLines: %d", code)
	}
	if code, body := get(t, base+"?previous=true", "good"); code != 404 || !strings.Contains(body, "previous terminated container") {
		t.Fatalf("previous: %d %q", code, body)
	}
	if code, _ := get(t, hs.URL+"/containerLogs/default/web/nope", "good"); code != 404 {
		t.Fatalf("unknown container: %d", code)
	}
	// The good token was reviewed once and then trusted for a while.
	if n := reviews.Load(); n != 2 {
		t.Fatalf("reviews = %d, want 2 (a missing token is not reviewed; the bad one once; the good one once, then trusted)", n)
	}
}

func TestLogsFollow(t *testing.T) {
	hs, rt, id, _ := setup(t)
	req, _ := http.NewRequest("GET", hs.URL+"/containerLogs/default/web/app?follow=true&tailLines=0", nil)
	req.Header.Set("Authorization", "Bearer good")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := rt.WriteLog(id, "stdout", "later\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	done := make(chan string, 1)
	go func() {
		n, _ := io.ReadAtLeast(resp.Body, buf, len("later\n"))
		done <- string(buf[:n])
	}()
	select {
	case got := <-done:
		if got != "later\n" {
			t.Fatalf("followed %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a line written after the request never streamed")
	}
}

func TestSummary(t *testing.T) {
	hs, _, _, _ := setup(t)
	code, body := get(t, hs.URL+"/stats/summary", "good")
	if code != 200 {
		t.Fatalf("summary: %d %s", code, body)
	}
	var s Summary
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	if s.Node.NodeName != "n1" || len(s.Pods) != 1 || s.Pods[0].CPU.UsageCoreNanoSeconds != 5e9 || s.Pods[0].Memory.WorkingSetBytes != 64<<20 {
		t.Fatalf("summary %+v", s)
	}
}

// fakeUsage is a node reading and a snapshot of one container.
type fakeUsage struct{}

var usageAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (fakeUsage) Node() (stats.Node, error) {
	return stats.Node{Time: usageAt, CPU: cgroups.CPU{UsageNanos: 90e9}, Memory: cgroups.Memory{WorkingSet: 3 << 30, Limit: 8 << 30}, Cores: 2}, nil
}

func (u fakeUsage) Snapshot(context.Context) (*stats.Snapshot, error) {
	n, _ := u.Node()
	return &stats.Snapshot{Node: n, Containers: []stats.Sample{{
		ContainerInfo: stats.ContainerInfo{ID: "c1", Name: "k8s_app", Image: "img", Namespace: "default", Pod: "web", PodUID: "u1", Container: "app"},
		Cgroup:        "/docker/c1", Time: usageAt,
		Stats: cgroups.Stats{CPU: cgroups.CPU{UsageNanos: 2500e6}, Memory: cgroups.Memory{WorkingSet: 1 << 20}},
	}}}, nil
}

// Each metrics endpoint serves its own series, behind authentication; without a usage
// reader or probe registry the endpoints are not there.
func TestMetricsEndpoints(t *testing.T) {
	review := func(_ context.Context, token string) (Identity, bool, error) {
		return Identity{User: "admin"}, token == "good", nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewNodeNameCollector("n1"))
	probes := prometheus.NewRegistry()
	counter := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prober_probe_total"}, []string{"probe_type", "result"})
	probes.MustRegister(counter)
	counter.WithLabelValues("Liveness", "successful").Add(3)
	s := New(Config{Node: "n1", Runtime: fake.New(clock.Real{}), Containers: podList{}, Registry: reg, Usage: fakeUsage{}, Probes: probes, Review: review})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	for path, want := range map[string][]string{
		"/metrics": {`kubelet_node_name{node="n1"} 1`},
		"/metrics/resource": {
			`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 2.5`,
			`node_cpu_usage_seconds_total 90`, `resource_scrape_error 0`},
		"/metrics/cadvisor": {
			`container_memory_working_set_bytes{container="app",id="/docker/c1",image="img",name="k8s_app",namespace="default",pod="web"} 1.048576e+06`,
			`machine_cpu_cores 2`},
		"/metrics/probes": {`prober_probe_total{probe_type="Liveness",result="successful"} 3`},
	} {
		if code, _ := get(t, hs.URL+path, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without a token: %d, want 401", path, code)
		}
		code, body := get(t, hs.URL+path, "good")
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %s:\n%s", path, w, body)
			}
		}
		if path == "/metrics" && strings.Contains(body, "container_cpu_usage_seconds_total") {
			t.Errorf("/metrics carries container usage, which is /metrics/resource's and /metrics/cadvisor's")
		}
	}
	code, body := get(t, hs.URL+"/stats/summary", "good")
	var sum Summary
	if err := json.Unmarshal([]byte(body), &sum); code != 200 || err != nil {
		t.Fatalf("summary: %d %v %s", code, err, body)
	}
	if sum.Node.CPU == nil || sum.Node.CPU.UsageCoreNanoSeconds != 90e9 || sum.Node.Memory == nil || sum.Node.Memory.WorkingSetBytes != 3<<30 {
		t.Errorf("summary's node: %+v, want the node's own usage", sum.Node)
	}
	// The pods come from the same reading, not from the runtime's stats (the fake runtime
	// has no containers at all).
	if len(sum.Pods) != 1 || sum.Pods[0].PodRef.UID != "u1" || len(sum.Pods[0].Containers) != 1 ||
		sum.Pods[0].Containers[0].CPU.UsageCoreNanoSeconds != 2500e6 || sum.Pods[0].Memory.WorkingSetBytes != 1<<20 {
		t.Errorf("summary's pods: %+v, want web's app from the usage reading", sum.Pods)
	}

	bare := httptest.NewServer(New(Config{Node: "n1", Runtime: fake.New(clock.Real{}), Containers: podList{}, Review: review}).Handler())
	defer bare.Close()
	for _, path := range []string{"/metrics/resource", "/metrics/cadvisor", "/metrics/probes"} {
		if code, _ := get(t, bare.URL+path, "good"); code != http.StatusNotFound {
			t.Errorf("%s without a source: %d, want 404", path, code)
		}
	}
}

func TestContainerSamples(t *testing.T) {
	rt := fake.New(clock.Real{})
	rt.AddImage("img")
	ctx := t.Context()
	id, _ := rt.Create(ctx, runtime.ContainerConfig{Name: "app", Image: "img"})
	if err := rt.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	if err := rt.SetStats(id, runtime.Stats{Timestamp: at, CPUUsageNanos: 7e9, MemoryWorkingSetBytes: 3 << 20}); err != nil {
		t.Fatal(err)
	}
	// "gone" is listed but the runtime no longer has it: skipped, not an error.
	s := New(Config{Node: "n1", Runtime: rt, Containers: podList{{Namespace: "default", Name: "web", UID: "u1",
		Containers: map[string]string{"app": id, "gone": "no-such-id"}}}})
	got, err := s.ContainerSamples(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ContainerSample{{ID: id, Stats: runtime.Stats{Timestamp: at, CPUUsageNanos: 7e9, MemoryWorkingSetBytes: 3 << 20}}}
	if len(got) != 1 || got[0].ID != want[0].ID || got[0].Stats != want[0].Stats {
		t.Errorf("samples = %+v, want %+v", got, want)
	}
}

type podList []PodRef

func (podList) ContainerID(context.Context, string, string, string, bool) (string, error) {
	return "", runtime.ErrNotFound
}

func (p podList) PodContainers(context.Context) ([]PodRef, error) { return p, nil }

func (podList) SandboxID(context.Context, string, string) (string, error) {
	return "", runtime.ErrNotFound
}
