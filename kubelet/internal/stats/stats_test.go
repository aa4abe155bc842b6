package stats

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"minik8s.io/kubelet/internal/pods/spec"
	rt "minik8s.io/kubelet/internal/runtime"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	appID     = "aaaa000000000000000000000000000000000000000000000000000000000001"
	sandboxID = "bbbb000000000000000000000000000000000000000000000000000000000002"
)

// fakeRuntime lists containers and answers Inspect, counting the inspections.
type fakeRuntime struct {
	list      []rt.Container
	full      map[string]rt.Container
	inspected int
	listed    int
}

func (f *fakeRuntime) List(_ context.Context, match map[string]string) ([]rt.Container, error) {
	f.listed++
	var out []rt.Container
	for _, c := range f.list {
		ok := true
		for k, v := range match {
			ok = ok && c.Labels[k] == v
		}
		if ok {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeRuntime) Inspect(_ context.Context, id string) (rt.Container, error) {
	f.inspected++
	c, ok := f.full[id]
	if !ok {
		return rt.Container{}, rt.ErrNotFound
	}
	return c, nil
}

var started = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// web is pod default/web on node n1: an app container (pid 101) and its sandbox (pid 202),
// whose cgroups and proc entries are the fake trees of the cgroups package.
func web(node string) *fakeRuntime {
	labels := func(uid, pod, container, node string) map[string]string {
		l := map[string]string{spec.LabelPodUID: uid, spec.LabelPodName: pod, spec.LabelPodNamespace: "default",
			spec.LabelContainerName: container, spec.LabelNode: node}
		if container == spec.SandboxName {
			l[spec.LabelSandbox] = "true"
		}
		return l
	}
	app, sb, other := labels("u1", "web", "app", node), labels("u1", "web", spec.SandboxName, node), labels("u2", "elsewhere", "app", "n2")
	return &fakeRuntime{
		list: []rt.Container{
			{ID: appID, Labels: app, State: rt.StateRunning},
			{ID: sandboxID, Labels: sb, State: rt.StateRunning},
			{ID: "exited", Labels: app, State: rt.StateExited},
			{ID: "other-node", Labels: other, State: rt.StateRunning},
		},
		full: map[string]rt.Container{
			appID:     {ID: appID, Name: "k8s_app_web_default_u1_0", Image: "minik8s/echo:1.0", Pid: 101, StartedAt: started},
			sandboxID: {ID: sandboxID, Name: "k8s_POD_web_default_u1_0", Image: "minik8s/pause:1.0", Pid: 202, StartedAt: started.Add(-time.Second)},
		},
	}
}

func newReader(t *testing.T, layout string, f *fakeRuntime) *Reader {
	t.Helper()
	sys := t.TempDir()
	if err := os.MkdirAll(filepath.Join(sys, "dev", "block", "8:0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "dev", "block", "8:0", "uevent"), []byte("MAJOR=8\nMINOR=0\nDEVNAME=sda\nDEVTYPE=disk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join("..", "cgroups", "testdata", layout)
	r, err := New(Config{Runtime: f, Node: "n1", CgroupRoot: filepath.Join(root, "cgroup"), ProcRoot: filepath.Join(root, "proc"),
		SysRoot: sys, Cores: 2, Now: func() time.Time { return time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func render(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

// Both endpoints render the same fake pod from either cgroup layout; the trees hold the same
// figures, so v1 and v2 differ only in the containers' cgroup paths (cAdvisor's id).
func TestEndpointsGolden(t *testing.T) {
	for _, layout := range []string{"v1", "v2"} {
		t.Run(layout, func(t *testing.T) {
			r := newReader(t, layout, web("n1"))
			golden(t, "resource-"+layout+".txt", render(t, ResourceCollector(r, nil)))
			golden(t, "cadvisor-"+layout+".txt", render(t, CadvisorCollector(r, nil)))
		})
	}
}

func TestSnapshot(t *testing.T) {
	f := web("n1")
	r := newReader(t, "v1", f)
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range snap.Containers {
		got = append(got, c.Pod+"/"+c.Container+" "+c.Cgroup)
	}
	want := []string{"web/POD /docker/" + sandboxID, "web/app /docker/" + appID}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("containers (-want +got):\n%s", d)
	}
	if snap.Containers[0].Net == nil || snap.Containers[1].Net != nil {
		t.Errorf("network read for %v, want the sandbox only", snap.Containers)
	}
	if snap.Node.Memory.Limit == 0 || snap.Node.CPU.UsageNanos == 0 || len(snap.Node.Net) == 0 {
		t.Errorf("node reading is empty: %+v", snap.Node)
	}
	// A second snapshot inspects nothing again; a container gone from the list is forgotten.
	if _, err := r.Snapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.inspected != 2 {
		t.Errorf("inspected %d times over two snapshots, want 2 (once per container)", f.inspected)
	}
	f.list = f.list[1:]
	if _, err := r.Snapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.known[appID]; ok {
		t.Error("the app container is still known after leaving the runtime's list")
	}
}

// A container whose cgroup is gone (it exited after the list) is left out, not an error.
func TestSnapshotSkipsExitedContainers(t *testing.T) {
	f := web("n1")
	c := f.full[appID]
	c.Pid = 999 // no such process
	f.full[appID] = c
	r := newReader(t, "v1", f)
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Containers) != 1 || snap.Containers[0].Container != spec.SandboxName {
		t.Errorf("containers %+v, want the sandbox alone", snap.Containers)
	}
}

func TestWritableLayerUsage(t *testing.T) {
	f := web("n1")
	layer := t.TempDir()
	if err := os.MkdirAll(filepath.Join(layer, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(layer, "tmp", "a"), make([]byte, 3000), 0o644); err != nil {
		t.Fatal(err)
	}
	c := f.full[appID]
	c.WritableLayer = layer
	f.full[appID] = c
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	r := newReader(t, "v1", f)
	r.cfg.Now = func() time.Time { return now }
	usage := func() uint64 {
		snap, err := r.Snapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range snap.Containers {
			if c.Container == "app" {
				if !c.FSKnown || c.FSDevice == "" {
					t.Fatalf("app's writable layer unknown: %+v", c)
				}
				return c.FSUsage
			}
		}
		t.Fatal("no app container")
		return 0
	}
	if got := usage(); got != 3000 {
		t.Fatalf("usage %d, want 3000", got)
	}
	// Measured again only once the period has passed.
	if err := os.WriteFile(filepath.Join(layer, "b"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := usage(); got != 3000 {
		t.Errorf("usage %d within the period, want the cached 3000", got)
	}
	now = now.Add(time.Minute)
	if got := usage(); got != 4000 {
		t.Errorf("usage %d after the period, want 4000", got)
	}
}

// failing is a Snapshotter that cannot read.
type failing struct{}

func (failing) Snapshot(context.Context) (*Snapshot, error) { return nil, errors.New("no cgroups") }

func TestResourceScrapeError(t *testing.T) {
	got := render(t, ResourceCollector(failing{}, nil))
	if !strings.Contains(got, "resource_scrape_error 1") || strings.Contains(got, "node_cpu_usage_seconds_total") {
		t.Errorf("a failed read:\n%s", got)
	}
}

// A recent relist is used instead of listing the runtime; an old one is not.
func TestSnapshotUsesARecentList(t *testing.T) {
	f := web("n1")
	r := newReader(t, "v1", f)
	now := r.cfg.Now()
	listedAt := now.Add(-time.Second)
	r.cfg.Listed = func() ([]rt.Container, time.Time) { return f.list, listedAt }
	snap, err := r.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if f.listed != 0 || len(snap.Containers) != 2 {
		t.Fatalf("with a second-old list: runtime listed %d times, %d containers; want 0 and 2", f.listed, len(snap.Containers))
	}
	listedAt = now.Add(-time.Minute)
	if _, err := r.Snapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.listed != 1 {
		t.Errorf("with a minute-old list: runtime listed %d times, want 1", f.listed)
	}
}
