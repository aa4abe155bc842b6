package nodestatus_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// fakeContainers are containers burning CPU at a set rate; advance moves their cumulative
// counters on, as Docker's would.
type fakeContainers struct {
	mu   sync.Mutex
	ctrs map[string]*fakeContainer
}

type fakeContainer struct {
	milliCPU int64 // rate
	mem      uint64
	cpuNanos uint64
	at       time.Time
}

func (f *fakeContainers) set(id string, milliCPU int64, mem uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.ctrs[id]
	if !ok {
		c = &fakeContainer{}
		f.ctrs[id] = c
	}
	c.milliCPU, c.mem = milliCPU, mem
}

func (f *fakeContainers) resetCounter(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctrs[id].cpuNanos = 0
}

func (f *fakeContainers) advance(d time.Duration, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.ctrs {
		c.cpuNanos += uint64(c.milliCPU) * uint64(d.Nanoseconds()) / 1000
		c.at = now
	}
}

func (f *fakeContainers) ContainerUsage(context.Context) ([]nodestatus.ContainerUsage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []nodestatus.ContainerUsage
	for id, c := range f.ctrs {
		out = append(out, nodestatus.ContainerUsage{ID: id, CPUNanos: c.cpuNanos, MemoryBytes: c.mem, Time: c.at})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// fakePatcher records merge patches and answers with a node of 4 CPUs and 1Gi allocatable.
type fakePatcher struct {
	mu       sync.Mutex
	patches  []map[string]string // the annotations of each accepted patch
	failNext error
}

func (p *fakePatcher) Patch(_ context.Context, ns, name string, pt types.PatchType, data []byte, sub ...string) (*corev1.Node, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.failNext; err != nil {
		p.failNext = nil
		return nil, err
	}
	if ns != "" || name != "node-1" || pt != types.MergePatchType || len(sub) != 0 {
		return nil, errors.New("want a merge patch of node-1 itself")
	}
	var body struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return nil, err
	}
	var all map[string]any
	_ = json.Unmarshal(data, &all)
	if len(all) != 1 {
		return nil, errors.New("the patch touches more than metadata")
	}
	p.patches = append(p.patches, body.Metadata.Annotations)
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: body.Metadata.Annotations},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}, nil
}

func (p *fakePatcher) written() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]string(nil), p.patches...)
}

func usageAt(cpu, mem string, at time.Time) map[string]string {
	return map[string]string{scheme.AnnotationUsageCPU: cpu, scheme.AnnotationUsageMemory: mem,
		scheme.AnnotationUsageTime: at.UTC().Format(time.RFC3339)}
}

func TestUsageReporter(t *testing.T) {
	clk := clock.NewFake(t0)
	src := &fakeContainers{ctrs: map[string]*fakeContainer{}}
	api := &fakePatcher{}
	r, err := nodestatus.NewUsageReporter(nodestatus.UsageConfig{Node: "node-1"}, src, api, clk, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	const mi = 1 << 20
	steps := []struct {
		name    string
		elapse  time.Duration
		do      func()
		wantErr bool
		want    map[string]string // the new patch, nil for none
	}{
		{"first sample only sets the baseline", 0, func() { src.set("a", 500, 100*mi); src.set("b", 200, 50*mi) }, false, nil},
		{"second sample reports the rate and the memory", 10 * time.Second, nil, false, usageAt("700m", "150Mi", t0.Add(10*time.Second))},
		{"nothing changed", 10 * time.Second, nil, false, nil},
		// c has no earlier sample: its memory counts now, its CPU from the next sample.
		{"a new container below the memory threshold", 10 * time.Second, func() { src.set("c", 150, 10*mi) }, false, nil},
		// +150m is over 50m but under 5% of the 4 CPUs the node has (200m).
		{"move under 5% of allocatable", 10 * time.Second, nil, false, nil},
		{"move over the threshold", 10 * time.Second, func() { src.set("a", 800, 100*mi) }, false, usageAt("1150m", "160Mi", t0.Add(50*time.Second))},
		{"a counter going back is skipped, not negative", 10 * time.Second, func() { src.resetCounter("a") }, false, usageAt("350m", "160Mi", t0.Add(60*time.Second))},
		{"back to steady", 10 * time.Second, nil, false, usageAt("1150m", "160Mi", t0.Add(70*time.Second))},
		{"quiet before the refresh", 50 * time.Second, nil, false, nil},
		{"refresh after a minute unchanged", 10 * time.Second, nil, false, usageAt("1150m", "160Mi", t0.Add(130*time.Second))},
		// +100Mi is over 64Mi and over 5% of 1Gi.
		{"memory moves, patch fails", 10 * time.Second, func() {
			src.set("b", 200, 150*mi)
			api.mu.Lock()
			api.failNext = errors.New("apiserver down")
			api.mu.Unlock()
		}, true, nil},
		{"failed report is retried", 10 * time.Second, nil, false, usageAt("1150m", "260Mi", t0.Add(150*time.Second))},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clk.Step(s.elapse)
			if s.do != nil {
				s.do()
			}
			src.advance(s.elapse, clk.Now())
			before := len(api.written())
			err := r.Sync(t.Context())
			if (err != nil) != s.wantErr {
				t.Fatalf("Sync error = %v, want error %v", err, s.wantErr)
			}
			got := api.written()[before:]
			var want []map[string]string
			if s.want != nil {
				want = append(want, s.want)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("patches (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUsageReporterStartReportsEveryPeriod(t *testing.T) {
	clk := clock.NewFake(t0)
	src := &fakeContainers{ctrs: map[string]*fakeContainer{}}
	src.set("a", 250, 1<<30)
	api := &fakePatcher{}
	r, err := nodestatus.NewUsageReporter(nodestatus.UsageConfig{Node: "node-1", Period: 5 * time.Second}, src, api, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Start(ctx) }()
	eventually(t, "the first sample", func() bool { return clk.Waiters() == 1 })
	src.advance(5*time.Second, t0.Add(5*time.Second))
	clk.Step(5 * time.Second)
	eventually(t, "the first report", func() bool { return len(api.written()) == 1 })
	if diff := cmp.Diff(usageAt("250m", "1Gi", t0.Add(5*time.Second)), api.written()[0]); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
}
