package fake_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/fake"
	"minik8s.io/kubelet/internal/runtime/runtimetest"
	"minik8s.io/shared/workqueue/clock"
)

const image = "minik8s-test/helper:fake"

func TestContract(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
		f := fake.New(clock.Real{})
		f.AddImage(image)
		f.SetProgram(image, runtimetest.Program)
		f.SetExecutables(image, runtimetest.HelperPath)
		return runtimetest.Target{Runtime: f, Image: image, Labels: map[string]string{runtimetest.TestLabel: "runtime"}}
	})
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func started(t *testing.T, f *fake.Runtime, name string) string {
	t.Helper()
	f.AddImage("pause")
	id, err := f.Create(t.Context(), runtime.ContainerConfig{Name: name, Image: "pause"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := f.Start(t.Context(), id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return id
}

func TestExitAndCalls(t *testing.T) {
	clk := clock.NewFake(t0)
	f := fake.New(clk)
	id := started(t, f, "c1")
	clk.Step(time.Second)
	if err := f.Exit(id, 2, true); err != nil {
		t.Fatalf("Exit: %v", err)
	}
	c, err := f.Inspect(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.Container{State: runtime.StateExited, ExitCode: 2, OOMKilled: true,
		CreatedAt: t0, StartedAt: t0, FinishedAt: t0.Add(time.Second)}
	got := runtime.Container{State: c.State, ExitCode: c.ExitCode, OOMKilled: c.OOMKilled,
		CreatedAt: c.CreatedAt, StartedAt: c.StartedAt, FinishedAt: c.FinishedAt}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after Exit (-want +got):\n%s", diff)
	}
	if err := f.Exit(id, 0, false); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("Exit of an exited container: %v, want ErrNotRunning", err)
	}
	wantCalls := []fake.Call{{Method: "Create", Arg: "c1"}, {Method: "Start", Arg: id}, {Method: "Inspect", Arg: id}}
	if diff := cmp.Diff(wantCalls, f.Calls()); diff != "" {
		t.Errorf("Calls (-want +got):\n%s", diff)
	}
}

func TestFailNext(t *testing.T) {
	f := fake.New(clock.NewFake(t0))
	f.AddImage("pause")
	boom := errors.New("boom")
	f.FailNext("Create", boom)
	cfg := runtime.ContainerConfig{Name: "c", Image: "pause"}
	if _, err := f.Create(t.Context(), cfg); !errors.Is(err, boom) {
		t.Fatalf("first Create: %v, want boom", err)
	}
	if _, err := f.Create(t.Context(), cfg); err != nil {
		t.Fatalf("second Create: %v, want success", err)
	}
}

func TestPull(t *testing.T) {
	f := fake.New(clock.NewFake(t0))
	if err := f.Pull(t.Context(), "nginx"); !errors.Is(err, runtime.ErrRegistryUnavailable) {
		t.Errorf("Pull without a registry: %v, want ErrRegistryUnavailable", err)
	}
	f.AddRegistryImage("nginx:latest")
	if err := f.Pull(t.Context(), "redis"); !errors.Is(err, runtime.ErrImageNotFound) {
		t.Errorf("Pull of an image the registry lacks: %v, want ErrImageNotFound", err)
	}
	if err := f.Pull(t.Context(), "nginx"); err != nil {
		t.Errorf("Pull(nginx): %v", err)
	}
	if ok, _ := f.ImagePresent(t.Context(), "nginx:latest"); !ok {
		t.Errorf("nginx absent after Pull")
	}
}

// A program that ignores the stop signal is killed when the fake clock passes the grace.
func TestStopGraceUsesClock(t *testing.T) {
	clk := clock.NewFake(t0)
	f := fake.New(clk)
	f.AddImage("app")
	subscribed := make(chan struct{})
	f.SetProgram("app", func(ctx context.Context, p *fake.Process) int {
		p.Signals()
		close(subscribed)
		<-ctx.Done()
		return 0
	})
	id, _ := f.Create(t.Context(), runtime.ContainerConfig{Name: "c", Image: "app"})
	if err := f.Start(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	<-subscribed
	stopped := make(chan error, 1)
	go func() { stopped <- f.Stop(context.Background(), id, 30*time.Second) }()
	for clk.Waiters() == 0 {
		time.Sleep(time.Millisecond)
	}
	if c, _ := f.Inspect(t.Context(), id); c.State != runtime.StateRunning {
		t.Fatalf("state during grace = %s, want running", c.State)
	}
	clk.Step(30 * time.Second)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if c, _ := f.Inspect(t.Context(), id); c.State != runtime.StateExited || c.ExitCode != 137 {
		t.Errorf("after grace: %s %d, want exited 137", c.State, c.ExitCode)
	}
}

func TestWriteLogFollow(t *testing.T) {
	clk := clock.NewFake(t0)
	f := fake.New(clk)
	id := started(t, f, "c")
	if err := f.WriteLog(id, "stdout", "a\npartial"); err != nil {
		t.Fatal(err)
	}
	rc, err := f.Logs(t.Context(), id, runtime.LogOptions{Follow: true, Tail: -1, Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	f.WriteLog(id, "stderr", "b\n")
	f.WriteLog(id, "stdout", " line\n")
	f.Exit(id, 0, false)
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	ts := t0.Format(fake.TimestampFormat)
	want := ts + " a\n" + ts + " b\n" + ts + " partial line\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("followed log (-want +got):\n%s", diff)
	}
}
