package runtimetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/fake"
	"minik8s.io/kubelet/internal/runtime/runtimetest/helper"
)

// TestLabel marks every container the suite creates, so a cleanup can find leftovers.
const TestLabel = "minik8s.test"

// HelperPath is where the helper binary sits in the test image.
const HelperPath = "/helper"

// Target is one runtime under test.
type Target struct {
	Runtime runtime.Runtime
	// Image is present in the runtime and runs HelperPath as the helper interpreter; it holds
	// no other executable.
	Image string
	// Labels are added to every container; they must include TestLabel.
	Labels map[string]string
	// HostNetNS says NetNS paths exist on this host and can be compared.
	HostNetNS bool
}

// Program runs the helper as a fake runtime's simulated process; install it with
// fake.Runtime.SetProgram for the image a Target names.
func Program(ctx context.Context, p *fake.Process) int {
	args := p.Args()
	if len(args) == 0 {
		return 64
	}
	return helper.Main(ctx, p, args[1:])
}

// BuildHelper compiles the helper as a static binary into dir and returns its path.
func BuildHelper(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "helper")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out,
		"minik8s.io/kubelet/internal/runtime/runtimetest/helperbin")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build helper: %w: %s", err, msg)
	}
	return out, nil
}

// RemoveLabeled removes every container carrying labels (leftovers of earlier runs).
func RemoveLabeled(ctx context.Context, rt runtime.Runtime, labels map[string]string) error {
	cs, err := rt.List(ctx, labels)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if err := rt.Remove(ctx, c.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Run runs the contract suite; newTarget is called once per test case.
func Run(t *testing.T, newTarget func(t *testing.T) Target) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h *harness)
	}{
		{"Version", testVersion},
		{"CreateInspectList", testCreateInspectList},
		{"ExitCode", testExitCode},
		{"StartFailure", testStartFailure},
		{"OOMKilled", testOOMKilled},
		{"StopSignal", testStopSignal},
		{"StopKillsAfterGrace", testStopKillsAfterGrace},
		{"SharedNamespaces", testSharedNamespaces},
		{"Logs", testLogs},
		{"LogsFollow", testLogsFollow},
		{"Stats", testStats},
		{"Exec", testExec},
		{"ExecStream", testExecStream},
		{"Attach", testAttach},
		{"AttachTTY", testAttachTTY},
		{"Images", testImages},
		{"NetNS", testNetNS},
		{"NotFound", testNotFound},
		{"NameInUse", testNameInUse},
		{"RemoveRunning", testRemoveRunning},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newHarness(t, newTarget(t)))
		})
	}
}

// wait bounds every condition the suite waits for; generous because Docker on a busy machine
// can be slow, and never part of an assertion.
const wait = 90 * time.Second

type harness struct {
	t  *testing.T
	rt runtime.Runtime
	tg Target
}

func newHarness(t *testing.T, tg Target) *harness {
	if tg.Labels[TestLabel] == "" {
		t.Fatalf("target labels %v lack %s", tg.Labels, TestLabel)
	}
	return &harness{t: t, rt: tg.Runtime, tg: tg}
}

func unique() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// config is a helper container running script, labelled and uniquely named.
func (h *harness) config(script ...string) runtime.ContainerConfig {
	labels := maps.Clone(h.tg.Labels)
	labels["minik8s.test/case"] = unique()
	return runtime.ContainerConfig{
		Name:    "mk8s-rt-" + unique(),
		Image:   h.tg.Image,
		Command: []string{HelperPath},
		Args:    script,
		Labels:  labels,
	}
}

func (h *harness) create(cfg runtime.ContainerConfig) string {
	h.t.Helper()
	id, err := h.rt.Create(h.t.Context(), cfg)
	if err != nil {
		h.t.Fatalf("Create(%s): %v", cfg.Name, err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := h.rt.Remove(ctx, id); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			h.t.Errorf("cleanup: Remove(%s): %v", id, err)
		}
	})
	return id
}

func (h *harness) run(cfg runtime.ContainerConfig) string {
	h.t.Helper()
	id := h.create(cfg)
	if err := h.rt.Start(h.t.Context(), id); err != nil {
		h.t.Fatalf("Start(%s): %v", cfg.Name, err)
	}
	return id
}

func (h *harness) inspect(id string) runtime.Container {
	h.t.Helper()
	c, err := h.rt.Inspect(h.t.Context(), id)
	if err != nil {
		h.t.Fatalf("Inspect(%s): %v", id, err)
	}
	return c
}

// eventually polls cond until it holds, failing the test with what it last saw.
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("gave up waiting for %s; last saw %s", what, seen)
		}
		select {
		case <-h.t.Context().Done():
			h.t.Fatalf("waiting for %s: %v", what, h.t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (h *harness) waitState(id string, want runtime.State) runtime.Container {
	h.t.Helper()
	var c runtime.Container
	h.eventually(fmt.Sprintf("%s to be %s", id[:12], want), func() (bool, string) {
		c = h.inspect(id)
		if want == runtime.StateRunning && c.State == runtime.StateExited {
			h.t.Fatalf("%s exited (%d) instead of running; logs %q", id[:12], c.ExitCode,
				h.logs(id, runtime.LogOptions{Tail: -1}))
		}
		return c.State == want, fmt.Sprintf("%+v", c)
	})
	return c
}

func (h *harness) logs(id string, opts runtime.LogOptions) string {
	h.t.Helper()
	rc, err := h.rt.Logs(h.t.Context(), id, opts)
	if err != nil {
		h.t.Fatalf("Logs(%s, %+v): %v", id, opts, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		h.t.Fatalf("read logs of %s: %v", id, err)
	}
	return string(b)
}

func (h *harness) waitLog(id, want string) string {
	h.t.Helper()
	var out string
	h.eventually(fmt.Sprintf("%q in the log of %s", want, id[:12]), func() (bool, string) {
		out = h.logs(id, runtime.LogOptions{Tail: -1})
		return strings.Contains(out, want), fmt.Sprintf("%q", out)
	})
	return out
}
