package reconcile

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"minik8s.io/shared/metrics"
)

// histogram finds the histogram of name whose labels include want.
func histogram(t *testing.T, reg *metrics.Registry, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	return find(t, reg, name, want).GetHistogram()
}

func find(t *testing.T, reg *metrics.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metric
				}
			}
			return m
		}
	}
	t.Fatalf("no %s%v gathered", name, want)
	return nil
}

// TestLoopRecordsMetrics checks that reconciling records how long each sync took by result,
// the errors, and the queue's adds and retries, under the loop's name.
func TestLoopRecordsMetrics(t *testing.T) {
	reg := metrics.NewRegistry()
	SetMetrics(reg)
	defer SetMetrics(nil)
	const pause = 20 * time.Millisecond
	var mu sync.Mutex
	calls := map[string]int{}
	l := New("measured", nil)
	l.Keys = func() []string { return []string{"slow", "flaky"} }
	l.Resync = time.Hour
	l.Sync = func(_ context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		switch {
		case key == "slow":
			time.Sleep(pause)
		case key == "flaky" && n <= 2:
			return errors.New("not yet")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		finished := calls["slow"] == 1 && calls["flaky"] == 3
		mu.Unlock()
		if finished && histogram(t, reg, "minik8s_controller_sync_duration_seconds", map[string]string{"controller": "measured", "result": "success"}).GetSampleCount() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls %v: the loop did not finish", calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	success := histogram(t, reg, "minik8s_controller_sync_duration_seconds", map[string]string{"controller": "measured", "result": "success"})
	if success.GetSampleSum() < pause.Seconds() {
		t.Errorf("successful syncs took %gs in all, want at least the slow one's %s", success.GetSampleSum(), pause)
	}
	failed := histogram(t, reg, "minik8s_controller_sync_duration_seconds", map[string]string{"controller": "measured", "result": "error"})
	got := map[string]float64{
		"failed syncs": float64(failed.GetSampleCount()),
		"errors":       find(t, reg, "minik8s_controller_sync_errors_total", map[string]string{"controller": "measured"}).GetCounter().GetValue(),
		"retries":      find(t, reg, "minik8s_workqueue_retries_total", map[string]string{"name": "measured"}).GetCounter().GetValue(),
		// slow and flaky from Keys, flaky again after each failure.
		"adds": find(t, reg, "minik8s_workqueue_adds_total", map[string]string{"name": "measured"}).GetCounter().GetValue(),
		"work": float64(histogram(t, reg, "minik8s_workqueue_work_duration_seconds", map[string]string{"name": "measured"}).GetSampleCount()),
	}
	want := map[string]float64{"failed syncs": 2, "errors": 2, "retries": 2, "adds": 4, "work": 4}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %g, want %g", k, got[k], w)
		}
	}
}
