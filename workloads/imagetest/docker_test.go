package imagetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testLabel marks every container these tests start, so a cleanup finds leftovers of a run
// that was killed: docker ps -a --filter label=minik8s.io/test=workloads-images.
const testLabel = "minik8s.io/test=workloads-images"

// repoRoot is the minik8s checkout this package sits in (workloads/imagetest).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "images.sh")); err != nil {
		t.Fatalf("scripts/images.sh not found from %s: %v", root, err)
	}
	return root
}

// docker runs the docker CLI and returns its trimmed stdout; stderr goes into the error.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func mustDocker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := docker(t.Context(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// removeTestContainers removes every container carrying testLabel.
func removeTestContainers(ctx context.Context) error {
	ids, err := docker(ctx, "ps", "-aq", "--filter", "label="+testLabel)
	if err != nil || ids == "" {
		return err
	}
	_, err = docker(ctx, append([]string{"rm", "-f"}, strings.Fields(ids)...)...)
	return err
}

// start runs a labelled container in the background and removes it when the test ends.
func start(t *testing.T, args ...string) string {
	t.Helper()
	id := mustDocker(t, append([]string{"run", "-d", "--label", testLabel}, args...)...)
	t.Cleanup(func() {
		if _, err := docker(context.Background(), "rm", "-f", id); err != nil {
			t.Errorf("remove container %s: %v", id, err)
		}
	})
	return id
}

// ipOf is the container's address on Docker's default bridge, reachable from the host.
func ipOf(t *testing.T, id string) string {
	t.Helper()
	ip := mustDocker(t, "inspect", "-f", "{{.NetworkSettings.IPAddress}}", id)
	if ip == "" {
		t.Fatalf("container %s has no address on the default bridge (docker inspect NetworkSettings.IPAddress is empty)", id)
	}
	return ip
}

// waitFor retries cond every 100 ms until it returns nil, failing with its last error after a
// deadline generous enough for a loaded machine.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after 60s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// do sends one request and returns status and body.
func do(method, url string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// mustDo is do that fails the test unless the answer has status want.
func mustDo(t *testing.T, method, url string, body io.Reader, want int) []byte {
	t.Helper()
	code, b, err := do(method, url, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if code != want {
		t.Fatalf("%s %s = %d, want %d; body %q", method, url, code, want, b)
	}
	return b
}

// waitServing waits until GET url answers 200.
func waitServing(t *testing.T, url string) {
	t.Helper()
	waitFor(t, "GET "+url, func() error {
		code, b, err := do(http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d: %q", code, b)
		}
		return nil
	})
}

// stopGracefully stops the container with a 30 s grace period and checks it exited 0: Docker
// kills with SIGKILL (exit 137) only when SIGTERM was not handled within the grace period.
func stopGracefully(t *testing.T, id string) {
	t.Helper()
	mustDocker(t, "stop", "-t", "30", id)
	state := mustDocker(t, "inspect", "-f", "{{.State.Status}} {{.State.ExitCode}} {{.State.OOMKilled}}", id)
	if state != "exited 0 false" {
		t.Fatalf("after docker stop: state, exit code, OOM killed = %q, want \"exited 0 false\"", state)
	}
}
