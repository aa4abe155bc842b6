package podsuite

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
)

// TestRunSmall runs the suite at a tiny size against a real apiserver,
// kubelet, Docker, RabbitMQ and Redis, checks that every pod was measured on
// both paths and that nothing of the run is left in Docker. It asserts no
// speed; the figures of a shared test machine mean nothing.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an apiserver and a kubelet on Docker; skipped under -short")
	}
	dc, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		_, err = dc.Ping(ctx)
		cancel()
	}
	if err != nil {
		t.Fatalf("Docker unreachable (run with -short to skip): %v", err)
	}
	defer dc.Close()

	cfg := Config{Workdir: t.TempDir(), Burst: 3, Paced: 4, Rate: 10, PLEGPeriods: []time.Duration{100 * time.Millisecond}, PodTimeout: time.Minute}
	var logs bytes.Buffer
	rep, err := Run(t.Context(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("Run: %v\nlogs:\n%s", err, logs.String())
	}
	if len(rep.Results) != 4 {
		t.Fatalf("results = %d, want 4 (2 tests x baseline and one kubelet)", len(rep.Results))
	}
	for _, r := range rep.Results {
		want := 3
		if r.HasCPU {
			want = 4
		}
		if r.Phases.Total.N != want || r.Phases.ToApp.N != want {
			t.Errorf("%s %s: %d pods measured (%d with Docker's times), want %d", r.Path, r.Test, r.Phases.Total.N, r.Phases.ToApp.N, want)
		}
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"| burst of 3", "| 4 at 10/s", "kubelet, PLEG 100ms", "docker + CNI directly", "p99"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}
	for _, label := range []string{baselineLabel + "=" + rep.RunID, labelPodNamespace + "=podbench-" + rep.RunID} {
		cs, err := dc.ContainerList(t.Context(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			t.Errorf("container %s %v (label %s) left behind", c.ID[:12], c.Names, label)
		}
	}
}
