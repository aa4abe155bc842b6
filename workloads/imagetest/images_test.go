package imagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/workloads/internal/echo"
	"minik8s.io/workloads/internal/load"
)

const version = "1.0"

func image(name string) string { return "minik8s/" + name + ":" + version }

// TestImages builds the images when missing (scripts/images.sh --if-missing) and runs each one.
// Run `make images` first to test images built from the current source.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker; skipped under -short")
	}
	if _, err := docker(t.Context(), "info", "-f", "{{.ServerVersion}}"); err != nil {
		t.Fatalf("Docker is unreachable, and these tests run the images in it: %v", err)
	}
	if err := removeTestContainers(t.Context()); err != nil {
		t.Fatalf("remove leftover test containers: %v", err)
	}

	root := repoRoot(t)
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "scripts", "images.sh"), "--if-missing")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/images.sh --if-missing: %v\n%s", err, out)
	}
	for _, name := range []string{"pause", "echo", "load", "fileserver", "incluster", "busybox"} {
		labels := mustDocker(t, "image", "inspect", "-f", `{{index .Config.Labels "org.opencontainers.image.title"}}`, image(name), "minik8s/"+name+":latest")
		if want := "minik8s/" + name + "\nminik8s/" + name; labels != want {
			t.Fatalf("%s and :latest title labels = %q, want %q", image(name), labels, want)
		}
	}

	t.Run("echo", testEcho)
	t.Run("pause", testPause)
	t.Run("busybox", testBusybox)
	t.Run("fileserver", testFileserver)
	t.Run("load", testLoad)
	t.Run("incluster", testIncluster)
}

func testEcho(t *testing.T) {
	id := start(t, "--hostname", "echo-imagetest", "-e", "POD_NAME=echo-pod", "-e", "POD_NAMESPACE=imagetest",
		"-e", "NODE_NAME=node-x", image("echo"))
	ip := ipOf(t, id)
	base := "http://" + ip + ":8080"
	waitServing(t, base+"/healthz")

	var got echo.Reply
	if err := json.Unmarshal(mustDo(t, http.MethodGet, base+"/hello?x=1", nil, http.StatusOK), &got); err != nil {
		t.Fatalf("decode echo reply: %v", err)
	}
	want := echo.Reply{
		Hostname: "echo-imagetest", PodIP: ip, PodName: "echo-pod", PodNamespace: "imagetest", NodeName: "node-x",
		Method: "GET", Path: "/hello", Query: "x=1",
	}
	// The client's address and headers depend on the host; the rest is the container's to say.
	got.RemoteAddr, got.Headers = "", nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("echo reply mismatch (-want +got):\n%s", diff)
	}

	// Each request is a line in the container log, which is what kubectl logs shows.
	waitFor(t, "request line in docker logs", func() error {
		logs, err := docker(t.Context(), "logs", id)
		if err != nil {
			return err
		}
		if !strings.Contains(logs, "path=/hello") {
			return fmt.Errorf("no request line for /hello in %q", logs)
		}
		return nil
	})
	stopGracefully(t, id)
}

func testPause(t *testing.T) {
	id := start(t, "--network", "none", image("pause"))
	// The line is written once the signal handlers are in place.
	waitFor(t, "pause says it is waiting", func() error {
		logs, err := docker(t.Context(), "logs", id)
		if err != nil {
			return err
		}
		if !strings.Contains(logs, "waiting for SIGTERM") {
			return fmt.Errorf("logs %q", logs)
		}
		return nil
	})
	if state := mustDocker(t, "inspect", "-f", "{{.State.Status}}", id); state != "running" {
		t.Fatalf("pause state = %q, want running", state)
	}
	stopGracefully(t, id)
}

func testBusybox(t *testing.T) {
	out := mustDocker(t, "run", "--rm", "--label", testLabel, "--network", "none", image("busybox"), "sh", "-c", "echo ok")
	if out != "ok" {
		t.Errorf("sh -c 'echo ok' printed %q, want ok", out)
	}
	// The applet links and /etc/passwd are part of the image too.
	out = mustDocker(t, "run", "--rm", "--label", testLabel, "--network", "none", "--user", "65534",
		image("busybox"), "sh", "-c", "whoami && ls /bin/wget")
	if out != "nobody\n/bin/wget" {
		t.Errorf("whoami && ls /bin/wget printed %q, want \"nobody\\n/bin/wget\"", out)
	}
}

func testFileserver(t *testing.T) {
	dir := t.TempDir()
	id := start(t, "-v", dir+":/data", image("fileserver"))
	base := "http://" + ipOf(t, id) + ":8080"
	waitServing(t, base+"/")

	const content = "written through the fileserver\n"
	mustDo(t, http.MethodPut, base+"/shared/hello.txt", strings.NewReader(content), http.StatusCreated)
	if got := string(mustDo(t, http.MethodGet, base+"/shared/hello.txt", nil, http.StatusOK)); got != content {
		t.Errorf("GET after PUT = %q, want %q", got, content)
	}
	if got := string(mustDo(t, http.MethodGet, base+"/", nil, http.StatusOK)); got != "shared/\n" {
		t.Errorf("listing of / = %q, want \"shared/\\n\"", got)
	}
	// The file is in the volume: the host and another container see it.
	b, err := os.ReadFile(filepath.Join(dir, "shared", "hello.txt"))
	if err != nil || string(b) != content {
		t.Errorf("file on the host = %q, %v; want %q", b, err, content)
	}
	out := mustDocker(t, "run", "--rm", "--label", testLabel, "--network", "none", "-v", dir+":/data",
		image("busybox"), "cat", "/data/shared/hello.txt")
	if out+"\n" != content {
		t.Errorf("busybox cat in a second container = %q, want %q", out, content)
	}
	stopGracefully(t, id)
}

func testLoad(t *testing.T) {
	id := start(t, image("load"))
	base := "http://" + ipOf(t, id) + ":8080"
	waitServing(t, base+"/healthz")

	steps := []struct {
		path string
		want load.Status
	}{
		{"/status", load.Status{}},
		{"/cpu/start?workers=1", load.Status{CPUWorkers: 1}},
		{"/memory/start?mb=16", load.Status{CPUWorkers: 1, MemoryMB: 16}},
		{"/status", load.Status{CPUWorkers: 1, MemoryMB: 16}},
		{"/cpu/stop", load.Status{MemoryMB: 16}},
		{"/memory/stop", load.Status{}},
	}
	for _, s := range steps {
		var got load.Status
		if err := json.Unmarshal(mustDo(t, http.MethodGet, base+s.path, nil, http.StatusOK), &got); err != nil {
			t.Fatalf("GET %s: decode: %v", s.path, err)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Fatalf("GET %s status mismatch (-want +got):\n%s", s.path, diff)
		}
	}
	// Stop under load too: busy workers must not delay the exit.
	mustDo(t, http.MethodGet, base+"/cpu/start?workers=2", nil, http.StatusOK)
	stopGracefully(t, id)
}

// TestCleanupLeavesNoContainers runs last (tests run in source order) and fails if a test left
// a labelled container behind.
func TestCleanupLeavesNoContainers(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker; skipped under -short")
	}
	out, err := docker(context.Background(), "ps", "-aq", "--filter", "label="+testLabel)
	if err != nil {
		t.Fatalf("Docker is unreachable: %v", err)
	}
	if out != "" {
		t.Errorf("containers labelled %s left behind: %s", testLabel, out)
	}
}
