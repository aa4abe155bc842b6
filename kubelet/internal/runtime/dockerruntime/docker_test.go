package dockerruntime

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/runtimetest"
)

// TestContract runs the runtime contract against the Docker daemon at $DOCKER_HOST (or the
// default socket).
func TestContract(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker daemon; skipped under -short")
	}
	rt, err := New("")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := rt.Version(ctx); err != nil {
		t.Fatalf("Docker is unreachable (%v): start dockerd or set DOCKER_HOST, or run with -short", err)
	}
	image := helperImage(t, rt)

	labels := map[string]string{runtimetest.TestLabel: "runtime"}
	if err := runtimetest.RemoveLabeled(t.Context(), rt, labels); err != nil {
		t.Fatalf("remove leftovers: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := runtimetest.RemoveLabeled(ctx, rt, labels); err != nil {
			t.Errorf("remove test containers: %v", err)
		}
	})
	runtimetest.Run(t, func(t *testing.T) runtimetest.Target {
		return runtimetest.Target{Runtime: rt, Image: image, Labels: labels, HostNetNS: true}
	})
}

// helperImage builds the helper FROM scratch, tagged by the binary's hash so an unchanged
// helper reuses the image of an earlier run.
func helperImage(t *testing.T, rt *Runtime) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	bin, err := runtimetest.BuildHelper(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	tag := "minik8s-test/helper:" + hex.EncodeToString(sum[:])[:16]
	if ok, err := rt.ImagePresent(ctx, tag); err != nil {
		t.Fatalf("ImagePresent(%s): %v", tag, err)
	} else if ok {
		return tag
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := []byte("FROM scratch\nCOPY helper /helper\nENTRYPOINT [\"/helper\"]\n")
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{{"Dockerfile", 0o644, dockerfile}, {"helper", 0o755, data}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	resp, err := rt.cli.ImageBuild(ctx, &buf, types.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true})
	if err != nil {
		t.Fatalf("build %s: %v", tag, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("build %s: %v", tag, err)
		}
		if msg.Error != "" {
			t.Fatalf("build %s: %s", tag, msg.Error)
		}
	}
	return tag
}

func TestWorkingSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    container.MemoryStats
		want uint64
	}{
		{"cgroup v2", container.MemoryStats{Usage: 100, Stats: map[string]uint64{"inactive_file": 30}}, 70},
		{"cgroup v1", container.MemoryStats{Usage: 100, Stats: map[string]uint64{"total_inactive_file": 40}}, 60},
		{"no cache", container.MemoryStats{Usage: 100}, 100},
		{"cache above usage", container.MemoryStats{Usage: 10, Stats: map[string]uint64{"inactive_file": 30}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workingSet(tc.m); got != tc.want {
				t.Errorf("workingSet = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestPullErr(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want error
	}{
		{`Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host`, runtime.ErrRegistryUnavailable},
		{`Get "https://r.example/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded)`, runtime.ErrRegistryUnavailable},
		{`manifest for r.example/x:v1 not found: manifest unknown: manifest unknown`, runtime.ErrImageNotFound},
		{`pull access denied for x, repository does not exist or may require 'docker login'`, runtime.ErrImageNotFound},
		{`something else entirely`, nil},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			err := pullErr(errors.New(tc.msg), tc.msg)
			for _, s := range []error{runtime.ErrRegistryUnavailable, runtime.ErrImageNotFound} {
				if errors.Is(err, s) != (s == tc.want) {
					t.Errorf("pullErr(%q) = %v; errors.Is(%v) = %v", tc.msg, err, s, errors.Is(err, s))
				}
			}
		})
	}
}

func TestMapErr(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{errdefs.NotFound(errors.New("No such container: x")), runtime.ErrNotFound},
		{errdefs.Conflict(errors.New("Container x is not running")), runtime.ErrNotRunning},
		{errdefs.System(errors.New("boom")), nil},
	} {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			got := mapErr(tc.err)
			if !errors.Is(got, tc.err) {
				t.Errorf("mapErr(%v) = %v lost the original", tc.err, got)
			}
			for _, s := range []error{runtime.ErrNotFound, runtime.ErrNotRunning} {
				if errors.Is(got, s) != (s == tc.want) {
					t.Errorf("mapErr(%v) = %v; errors.Is(%v) = %v", tc.err, got, s, errors.Is(got, s))
				}
			}
		})
	}
}
