package runtimetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/runtime"
)

func testVersion(t *testing.T, h *harness) {
	v, err := h.rt.Version(t.Context())
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	name, ver, ok := strings.Cut(v, "://")
	if !ok || name == "" || ver == "" {
		t.Errorf("Version = %q, want <runtime>://<version>", v)
	}
}

func testCreateInspectList(t *testing.T, h *harness) {
	cfg := h.config("print", "ready", "sleep", "forever")
	cfg.Labels["io.kubernetes.pod.uid"] = "uid-" + unique()
	cfg.Resources = runtime.Resources{CPUQuota: 50000, CPUPeriod: 100000, CPUShares: 512, MemoryLimit: 64 << 20}
	id := h.create(cfg)

	c := h.inspect(id)
	want := runtime.Container{ID: id, Name: cfg.Name, Image: cfg.Image, Labels: cfg.Labels,
		State: runtime.StateCreated, Resources: cfg.Resources}
	got := runtime.Container{ID: c.ID, Name: c.Name, Image: c.Image, Labels: c.Labels,
		State: c.State, Resources: c.Resources}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Inspect after Create (-want +got):\n%s", diff)
	}
	if c.CreatedAt.IsZero() || c.ImageID == "" || c.Pid != 0 {
		t.Errorf("Inspect after Create: CreatedAt %v, ImageID %q, Pid %d; want set, set, 0",
			c.CreatedAt, c.ImageID, c.Pid)
	}

	match := map[string]string{"io.kubernetes.pod.uid": cfg.Labels["io.kubernetes.pod.uid"]}
	listed := func(match map[string]string) []runtime.Container {
		cs, err := h.rt.List(t.Context(), match)
		if err != nil {
			t.Fatalf("List(%v): %v", match, err)
		}
		return cs
	}
	cs := listed(match)
	if len(cs) != 1 || cs[0].ID != id || cs[0].Name != cfg.Name || cs[0].State != runtime.StateCreated ||
		!cmp.Equal(cs[0].Labels, cfg.Labels) {
		t.Errorf("List(%v) = %+v, want just %s, created, with its labels", match, cs, id)
	}
	other := maps.Clone(match)
	other["minik8s.test/absent"] = "x"
	if cs := listed(other); len(cs) != 0 {
		t.Errorf("List(%v) = %+v, want none", other, cs)
	}
	if !slices.ContainsFunc(listed(nil), func(c runtime.Container) bool { return c.ID == id }) {
		t.Errorf("List(nil) lacks %s", id)
	}

	if err := h.rt.Start(t.Context(), id); err != nil {
		t.Fatalf("Start: %v", err)
	}
	c = h.waitState(id, runtime.StateRunning)
	if c.Pid <= 0 || c.StartedAt.IsZero() || !c.FinishedAt.IsZero() {
		t.Errorf("running container: Pid %d, StartedAt %v, FinishedAt %v; want >0, set, zero",
			c.Pid, c.StartedAt, c.FinishedAt)
	}
	if err := h.rt.Start(t.Context(), id); err != nil {
		t.Errorf("Start of a running container: %v, want nil", err)
	}
	if cs := listed(match); len(cs) != 1 || cs[0].State != runtime.StateRunning {
		t.Errorf("List after Start = %+v, want one running", cs)
	}
}

func testExitCode(t *testing.T, h *harness) {
	id := h.run(h.config("print", "bye", "exit", "3"))
	c := h.waitState(id, runtime.StateExited)
	if c.ExitCode != 3 || c.OOMKilled || c.Pid != 0 {
		t.Errorf("exited container: ExitCode %d, OOMKilled %v, Pid %d; want 3, false, 0", c.ExitCode, c.OOMKilled, c.Pid)
	}
	// Docker stamps a container's start once its start call returns and its end from the exit
	// event, so for a process that exits at once the end can come a little before the start.
	const stampSkew = time.Second
	if c.StartedAt.IsZero() || c.FinishedAt.IsZero() || c.FinishedAt.Before(c.StartedAt.Add(-stampSkew)) {
		t.Errorf("StartedAt %v, FinishedAt %v: want both set, finished after started (within %v)", c.StartedAt, c.FinishedAt, stampSkew)
	}
	if out := h.logs(id, runtime.LogOptions{Tail: -1}); out != "bye\n" {
		t.Errorf("logs = %q, want %q", out, "bye\n")
	}
}

// testStartFailure: a command the image lacks fails Start, and the container stays to say
// why: created, never started, with the runtime's error and a non-zero exit code.
func testStartFailure(t *testing.T, h *harness) {
	cfg := h.config()
	cfg.Command = []string{"no-such-command"}
	id := h.create(cfg)
	err := h.rt.Start(t.Context(), id)
	if err == nil || !strings.Contains(err.Error(), "no-such-command") {
		t.Fatalf("Start of a command the image lacks: err = %v, want one naming no-such-command", err)
	}
	c := h.inspect(id)
	if c.State != runtime.StateCreated || c.ExitCode == 0 || !strings.Contains(c.Error, "no-such-command") ||
		!c.StartedAt.IsZero() || c.Pid != 0 {
		t.Errorf("after the failed start: State %s, ExitCode %d, Error %q, StartedAt %v, Pid %d; want created, non-zero, the error, never started, 0",
			c.State, c.ExitCode, c.Error, c.StartedAt, c.Pid)
	}
	cs, err := h.rt.List(t.Context(), map[string]string{"minik8s.test/case": cfg.Labels["minik8s.test/case"]})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != id || cs[0].State != runtime.StateCreated {
		t.Errorf("List after the failed start = %+v, want the container, created", cs)
	}
}

func testOOMKilled(t *testing.T, h *harness) {
	cfg := h.config("alloc", "256", "sleep", "forever")
	cfg.MemoryLimit = 32 << 20
	id := h.run(cfg)
	c := h.waitState(id, runtime.StateExited)
	if !c.OOMKilled || c.ExitCode != 137 {
		t.Errorf("over its limit: OOMKilled %v, ExitCode %d; want true, 137", c.OOMKilled, c.ExitCode)
	}
}

func testStopSignal(t *testing.T, h *harness) {
	for _, tc := range []struct{ stopSignal, want string }{
		{"", "SIGTERM"},
		{"SIGUSR1", "SIGUSR1"},
	} {
		t.Run("signal="+tc.want, func(t *testing.T) {
			h := &harness{t: t, rt: h.rt, tg: h.tg}
			cfg := h.config("onterm", "7", "sleep", "forever")
			cfg.StopSignal = tc.stopSignal
			id := h.run(cfg)
			h.waitLog(id, "trapping")
			if err := h.rt.Stop(t.Context(), id, 60*time.Second); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			c := h.inspect(id)
			if c.State != runtime.StateExited || c.ExitCode != 7 {
				t.Errorf("after Stop: %s with %d, want exited with 7 (the signal handler's)", c.State, c.ExitCode)
			}
			if out := h.logs(id, runtime.LogOptions{Tail: -1}); !strings.Contains(out, "got "+tc.want) {
				t.Errorf("logs = %q, want the handler to report %s", out, tc.want)
			}
		})
	}
}

func testStopKillsAfterGrace(t *testing.T, h *harness) {
	id := h.run(h.config("ignoreterm", "sleep", "forever"))
	h.waitLog(id, "ignoring")
	if err := h.rt.Stop(t.Context(), id, time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	c := h.inspect(id)
	if c.State != runtime.StateExited || c.ExitCode != 137 {
		t.Errorf("after Stop: %s with %d, want exited with 137 (killed)", c.State, c.ExitCode)
	}
	if err := h.rt.Stop(t.Context(), id, time.Second); err != nil {
		t.Errorf("Stop of an exited container: %v, want nil", err)
	}
}

func testSharedNamespaces(t *testing.T, h *harness) {
	sandbox := h.config("serve", "127.0.0.1:8080", "sleep", "forever")
	sandbox.Hostname = "pod-a"
	sandbox.NetworkMode, sandbox.IpcMode, sandbox.UTSMode = "none", "shareable", "shareable"
	sid := h.run(sandbox)
	h.waitLog(sid, "listening")

	app := h.config("hostname", "dial", "127.0.0.1:8080", "sleep", "forever")
	app.NetworkMode, app.IpcMode, app.UTSMode = "container:"+sid, "container:"+sid, "container:"+sid
	aid := h.run(app)
	out := h.waitLog(aid, "hello from")
	if want := "pod-a\nhello from pod-a\n"; out != want {
		t.Errorf("app in the sandbox's namespaces logged %q, want %q", out, want)
	}

	// A container with its own network namespace must not reach the sandbox's localhost.
	alone := h.config("dial", "127.0.0.1:8080")
	alone.NetworkMode = "none"
	lid := h.run(alone)
	if c := h.waitState(lid, runtime.StateExited); c.ExitCode != 3 {
		t.Errorf("dial from another namespace exited %d, want 3 (refused); logs %q",
			c.ExitCode, h.logs(lid, runtime.LogOptions{Tail: -1}))
	}
}

// logScript writes four lines, waits for a connection on 9100 (a trigger from Exec), then
// writes a fifth and exits.
var logScript = []string{"eprint", "err-line", "sleep", "300ms", "print", "one", "print", "two",
	"print", "three", "await", "127.0.0.1:9100", "print", "four", "exit", "0"}

func testLogs(t *testing.T, h *harness) {
	id := h.run(h.config(logScript...))
	h.waitLog(id, "three")
	for _, tc := range []struct {
		name string
		opts runtime.LogOptions
		want string
	}{
		{"all", runtime.LogOptions{Tail: -1}, "err-line\none\ntwo\nthree\n"},
		{"tail 2", runtime.LogOptions{Tail: 2}, "two\nthree\n"},
		{"tail 0", runtime.LogOptions{Tail: 0}, ""},
		{"since the future", runtime.LogOptions{Tail: -1, Since: time.Now().Add(time.Hour)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.logs(id, tc.opts); got != tc.want {
				t.Errorf("Logs(%+v) = %q, want %q", tc.opts, got, tc.want)
			}
		})
	}
	t.Run("timestamps", func(t *testing.T) {
		c := h.inspect(id)
		got := h.logs(id, runtime.LogOptions{Tail: 1, Timestamps: true})
		stamp, line, _ := strings.Cut(got, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || line != "three\n" {
			t.Fatalf("Logs with timestamps = %q, want \"<RFC 3339 time> three\\n\" (%v)", got, err)
		}
		if at.Before(c.StartedAt.Add(-time.Minute)) || at.After(time.Now().Add(time.Minute)) {
			t.Errorf("log timestamp %v is not near the container's start %v", at, c.StartedAt)
		}
	})
}

func testLogsFollow(t *testing.T, h *harness) {
	id := h.run(h.config(logScript...))
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	rc, err := h.rt.Logs(ctx, id, runtime.LogOptions{Follow: true, Tail: -1})
	if err != nil {
		t.Fatalf("Logs(follow): %v", err)
	}
	defer rc.Close()
	lines := make(chan string)
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
			}
		}
		done <- sc.Err()
	}()
	var seen []string
	next := func(want string) {
		t.Helper()
		for {
			select {
			case l := <-lines:
				seen = append(seen, l)
				if l == want {
					return
				}
			case err := <-done:
				t.Fatalf("follow ended (%v) before %q; saw %q", err, want, seen)
			case <-ctx.Done():
				t.Fatalf("no %q in the followed log; saw %q", want, seen)
			}
		}
	}
	next("three")
	// "four" is written only after this trigger, so seeing it proves the stream is live. Once
	// the dial lands the script prints "four" and exits, and the engine kills whatever still
	// runs in the stopping container: the dial itself may end with 137 (SIGKILL), which is a
	// success here. A dial that came before the script listened fails, and is tried again.
	for attempt := 1; ; attempt++ {
		res, err := h.rt.Exec(t.Context(), id, []string{HelperPath, "dial", "127.0.0.1:9100"})
		if err != nil {
			t.Fatalf("trigger exec: %v", err)
		}
		if res.ExitCode == 0 || res.ExitCode == 137 {
			break
		}
		if attempt == 20 || ctx.Err() != nil {
			t.Fatalf("trigger exec: %+v after %d attempts", res, attempt)
		}
		time.Sleep(100 * time.Millisecond)
	}
	next("four")
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("follow ended with %v, want a clean end when the container exits", err)
		}
	case l := <-lines:
		t.Errorf("unexpected line %q after the last one", l)
	case <-ctx.Done():
		t.Errorf("follow did not end after the container exited")
	}
	if want := []string{"err-line", "one", "two", "three", "four"}; !cmp.Equal(seen, want) {
		t.Errorf("followed lines %q, want %q", seen, want)
	}
}

func testStats(t *testing.T, h *harness) {
	id := h.run(h.config("alloc", "64", "burn", "300ms", "print", "ready", "sleep", "forever"))
	h.waitLog(id, "ready")
	s, err := h.rt.Stats(t.Context(), id)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if s.CPUUsageNanos == 0 || s.MemoryWorkingSetBytes < 32<<20 || s.Timestamp.IsZero() {
		t.Errorf("Stats = %+v, want CPU > 0, working set >= 32 MiB (64 MiB touched), a timestamp", s)
	}
}

func testExec(t *testing.T, h *harness) {
	id := h.run(h.config("sleep", "forever"))
	h.waitState(id, runtime.StateRunning)
	for _, tc := range []struct {
		name     string
		cmd      []string
		wantCode int
		check    func(out string) bool
		want     string
	}{
		{"exit code and both streams", []string{HelperPath, "print", "out", "eprint", "err", "exit", "4"}, 4,
			func(out string) bool { return strings.Contains(out, "out\n") && strings.Contains(out, "err\n") },
			"out\\n and err\\n"},
		{"success", []string{HelperPath, "print", "fine"}, 0,
			func(out string) bool { return out == "fine\n" }, "fine\\n"},
		{"output capped at 64 KiB", []string{HelperPath, "print", strings.Repeat("x", 100<<10)}, 0,
			func(out string) bool { return len(out) == 64<<10 }, "64 KiB of x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.rt.Exec(t.Context(), id, tc.cmd)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.ExitCode != tc.wantCode || !tc.check(string(res.Output)) {
				t.Errorf("Exec = code %d, %d bytes %.80q; want code %d, %s",
					res.ExitCode, len(res.Output), res.Output, tc.wantCode, tc.want)
			}
		})
	}
	if err := h.rt.Stop(t.Context(), id, time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := h.rt.Exec(t.Context(), id, []string{HelperPath, "print", "x"}); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("Exec in a stopped container: %v, want ErrNotRunning", err)
	}
}

func testImages(t *testing.T, h *harness) {
	absent := "minik8s-test/absent-" + unique() + ":v1"
	if ok, err := h.rt.ImagePresent(t.Context(), h.tg.Image); err != nil || !ok {
		t.Errorf("ImagePresent(%s) = %v, %v; want true", h.tg.Image, ok, err)
	}
	if ok, err := h.rt.ImagePresent(t.Context(), absent); err != nil || ok {
		t.Errorf("ImagePresent(%s) = %v, %v; want false", absent, ok, err)
	}
	if id, err := h.rt.ImageID(t.Context(), h.tg.Image); err != nil || !strings.HasPrefix(id, "sha256:") {
		t.Errorf("ImageID(%s) = %q, %v; want a sha256: id", h.tg.Image, id, err)
	}
	if id, err := h.rt.ImageID(t.Context(), absent); err != nil || id != "" {
		t.Errorf("ImageID(%s) = %q, %v; want none", absent, id, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	err := h.rt.Pull(ctx, absent)
	t.Logf("Pull(%s): %v", absent, err)
	if !errors.Is(err, runtime.ErrRegistryUnavailable) && !errors.Is(err, runtime.ErrImageNotFound) {
		t.Errorf("Pull(%s) = %v, want ErrRegistryUnavailable or ErrImageNotFound", absent, err)
	}
	cfg := h.config("exit", "0")
	cfg.Image = absent
	if _, err := h.rt.Create(t.Context(), cfg); !errors.Is(err, runtime.ErrImageNotFound) {
		t.Errorf("Create from an absent image: %v, want ErrImageNotFound", err)
	}

	// An archive loads without a registry. The ref is fixed (and the archive the same bytes
	// each time), so runs against a real engine leave one tiny image, not one per run.
	const loaded = "minik8s-test/loaded:v1"
	refs, err := h.rt.LoadImage(t.Context(), bytes.NewReader(ImageArchive(loaded)))
	if err != nil || !slices.Contains(refs, loaded) {
		t.Errorf("LoadImage = %v, %v; want %s loaded", refs, err, loaded)
	}
	if ok, err := h.rt.ImagePresent(t.Context(), loaded); err != nil || !ok {
		t.Errorf("ImagePresent(%s) after LoadImage = %v, %v; want true", loaded, ok, err)
	}
	if _, err := h.rt.LoadImage(t.Context(), strings.NewReader("not an archive")); !errors.Is(err, runtime.ErrInvalidImage) {
		t.Errorf("LoadImage of garbage: %v, want ErrInvalidImage", err)
	}
}

func testNetNS(t *testing.T, h *harness) {
	sandbox := h.config("sleep", "forever")
	sandbox.NetworkMode = "none"
	sid := h.run(sandbox)
	app := h.config("sleep", "forever")
	app.NetworkMode = "container:" + sid
	aid := h.run(app)
	paths := map[string]string{}
	for _, id := range []string{sid, aid} {
		c := h.waitState(id, runtime.StateRunning)
		p, err := h.rt.NetNS(t.Context(), id)
		if err != nil {
			t.Fatalf("NetNS: %v", err)
		}
		if want := fmt.Sprintf("/proc/%d/ns/net", c.Pid); p != want {
			t.Errorf("NetNS = %q, want %q", p, want)
		}
		paths[id] = p
	}
	if h.tg.HostNetNS {
		s, err1 := os.Readlink(paths[sid])
		a, err2 := os.Readlink(paths[aid])
		if err1 != nil || err2 != nil || s != a {
			t.Errorf("netns of sandbox %q (%v) and app %q (%v): want the same namespace", s, err1, a, err2)
		}
	}
	if err := h.rt.Stop(t.Context(), aid, time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := h.rt.NetNS(t.Context(), aid); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("NetNS of a stopped container: %v, want ErrNotRunning", err)
	}
}

func testNotFound(t *testing.T, h *harness) {
	id := "mk8s-absent-" + unique()
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Inspect", func(ctx context.Context) error { _, err := h.rt.Inspect(ctx, id); return err }},
		{"Start", func(ctx context.Context) error { return h.rt.Start(ctx, id) }},
		{"Stop", func(ctx context.Context) error { return h.rt.Stop(ctx, id, time.Second) }},
		{"Remove", func(ctx context.Context) error { return h.rt.Remove(ctx, id) }},
		{"Logs", func(ctx context.Context) error {
			_, err := h.rt.Logs(ctx, id, runtime.LogOptions{Tail: -1})
			return err
		}},
		{"Stats", func(ctx context.Context) error { _, err := h.rt.Stats(ctx, id); return err }},
		{"Exec", func(ctx context.Context) error { _, err := h.rt.Exec(ctx, id, []string{"true"}); return err }},
		{"NetNS", func(ctx context.Context) error { _, err := h.rt.NetNS(ctx, id); return err }},
		{"ExecStream", func(ctx context.Context) error {
			_, err := h.rt.ExecStream(ctx, id, []string{"true"}, runtime.Streams{})
			return err
		}},
		{"Attach", func(ctx context.Context) error { return h.rt.Attach(ctx, id, runtime.Streams{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(t.Context()); !errors.Is(err, runtime.ErrNotFound) {
				t.Errorf("%s of an unknown container: %v, want ErrNotFound", tc.name, err)
			}
		})
	}
}

func testNameInUse(t *testing.T, h *harness) {
	cfg := h.config("exit", "0")
	h.create(cfg)
	if _, err := h.rt.Create(t.Context(), cfg); !errors.Is(err, runtime.ErrNameInUse) {
		t.Errorf("second Create named %s: %v, want ErrNameInUse", cfg.Name, err)
	}
}

func testRemoveRunning(t *testing.T, h *harness) {
	cfg := h.config("sleep", "forever")
	id := h.run(cfg)
	h.waitState(id, runtime.StateRunning)
	if err := h.rt.Remove(t.Context(), id); err != nil {
		t.Fatalf("Remove of a running container: %v", err)
	}
	if _, err := h.rt.Inspect(t.Context(), id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Inspect after Remove: %v, want ErrNotFound", err)
	}
	cs, err := h.rt.List(t.Context(), map[string]string{"minik8s.test/case": cfg.Labels["minik8s.test/case"]})
	if err != nil || len(cs) != 0 {
		t.Errorf("List after Remove = %+v, %v; want none", cs, err)
	}
}
