package load

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHandler(t *testing.T) {
	type step struct {
		path     string
		wantCode int
		want     Status // checked when wantCode is 200
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "cpu start, change level, stop",
			steps: []step{
				{"/status", 200, Status{}},
				{"/cpu/start?workers=2", 200, Status{CPUWorkers: 2}},
				{"/cpu/start?workers=1", 200, Status{CPUWorkers: 1}},
				{"/cpu/start", 200, Status{CPUWorkers: 1}},
				{"/cpu/stop", 200, Status{}},
			},
		},
		{
			name: "memory start, grow, shrink, stop",
			steps: []step{
				{"/memory/start?mb=2", 200, Status{MemoryMB: 2}},
				{"/memory/start?mb=5", 200, Status{MemoryMB: 5}},
				{"/memory/start?mb=1", 200, Status{MemoryMB: 1}},
				{"/memory/stop", 200, Status{}},
			},
		},
		{
			name: "cpu and memory are independent",
			steps: []step{
				{"/cpu/start?workers=1", 200, Status{CPUWorkers: 1}},
				{"/memory/start?mb=1", 200, Status{CPUWorkers: 1, MemoryMB: 1}},
				{"/cpu/stop", 200, Status{MemoryMB: 1}},
				{"/status", 200, Status{MemoryMB: 1}},
			},
		},
		{
			name: "bad requests change nothing",
			steps: []step{
				{"/cpu/start?workers=1", 200, Status{CPUWorkers: 1}},
				{"/cpu/start?workers=abc", 400, Status{}},
				{"/cpu/start?workers=-1", 400, Status{}},
				{"/cpu/start?workers=65", 400, Status{}},
				{"/memory/start?mb=99999", 400, Status{}},
				{"/status", 200, Status{CPUWorkers: 1}},
			},
		},
		{
			name:  "healthz",
			steps: []step{{"/healthz", 200, Status{}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Generator{}
			t.Cleanup(g.Stop)
			h := NewHandler(g)
			for _, s := range tt.steps {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, s.path, nil))
				if rec.Code != s.wantCode {
					t.Fatalf("GET %s = %d, want %d; body %s", s.path, rec.Code, s.wantCode, rec.Body)
				}
				if s.wantCode != 200 || s.path == "/healthz" {
					continue
				}
				var got Status
				if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
					t.Fatalf("GET %s: decode %q: %v", s.path, rec.Body, err)
				}
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Fatalf("GET %s status mismatch (-want +got):\n%s", s.path, diff)
				}
			}
		})
	}
}

// TestStopEndsWorkers checks the busy goroutines really exit: a leak would keep burning CPU
// after the pod was told its load is over.
func TestStopEndsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	g := &Generator{}
	if err := g.SetCPU(3); err != nil {
		t.Fatalf("SetCPU(3): %v", err)
	}
	if got := runtime.NumGoroutine(); got < before+3 {
		t.Fatalf("goroutines = %d after SetCPU(3), want at least %d", got, before+3)
	}
	g.Stop()
	// A worker counts until it has fully returned, a moment after Stop saw it finish.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines = %d 30s after Stop, want at most %d", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
