package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/dockerruntime"
	"minik8s.io/kubelet/internal/streaming"
)

const busybox = "minik8s/busybox:1.0"

// dockerTestLabel marks the containers of these tests, so a cleanup finds leftovers of any run.
var dockerTestLabel = map[string]string{"minik8s.test": "server-streams"}

// dockerBackend runs pod default/web on the Docker engine: a pause sandbox without a network
// (only its loopback) and busybox containers in its namespaces. The kubelet dials into the
// sandbox's namespace for real. restart creates new attach containers.
func dockerBackend(t *testing.T) (b *backend, restart func(t *testing.T)) {
	if testing.Short() {
		t.Skip("needs a Docker daemon; skipped under -short")
	}
	rt, err := dockerruntime.New("")
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := rt.Version(ctx); err != nil {
		t.Fatalf("Docker is unreachable (%v): start dockerd or set DOCKER_HOST, or run with -short", err)
	}
	for _, img := range []string{spec.DefaultSandboxImage, busybox} {
		if ok, err := rt.ImagePresent(ctx, img); err != nil || !ok {
			t.Fatalf("image %s missing (%v): run `make images`", img, err)
		}
	}
	removeDockerTestContainers(t, rt)
	t.Cleanup(func() { removeDockerTestContainers(t, rt) })

	run := func(t *testing.T, cfg runtime.ContainerConfig) string {
		t.Helper()
		cfg.Name = fmt.Sprintf("mk8s-stream-%s-%d", cfg.Name, time.Now().UnixNano())
		cfg.Labels = maps.Clone(dockerTestLabel)
		id, err := rt.Create(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.Start(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	sandbox := run(t, runtime.ContainerConfig{Name: "sandbox", Image: spec.DefaultSandboxImage, Hostname: "web",
		NetworkMode: "none", IpcMode: "shareable"})
	join := "container:" + sandbox
	shell := func(name, script string) runtime.ContainerConfig {
		return runtime.ContainerConfig{Name: name, Image: busybox, Command: []string{"sh", "-c", script},
			NetworkMode: join, IpcMode: join, UTSMode: join}
	}
	// httpd binds the loopback only: reaching it proves the dial happened in the namespace.
	app := run(t, shell("app", `mkdir -p /www && echo "hello from the pod" > /www/index.html &&
		httpd -p 127.0.0.1:8080 -h /www && exec nc -ll -p 9000 -e cat`))
	stopped := run(t, shell("stopped", "exit 0"))
	eventually(t, "the app's servers to listen", func() bool {
		res, err := rt.Exec(t.Context(), app, []string{"sh", "-c", "netstat -ltn | grep -q :9000 && netstat -ltn | grep -q 127.0.0.1:8080"})
		return err == nil && res.ExitCode == 0
	})
	b = &backend{rt: rt,
		pods: &podIndex{ids: map[string]string{"app": app, "stopped": stopped}, sandbox: sandbox},
		cmds: map[string]command{
			"streams": {[]string{"sh", "-c", "echo out; echo err >&2"}, "out\n"},
			"cat":     {[]string{"cat"}, ""},
			"exit3":   {[]string{"sh", "-c", "exit 3"}, ""},
			"winsize": {[]string{"sh", "-c", waitForSize(100, 30) + `; echo "size $(stty size)"`}, "size 30 100\n"},
		},
		greet:        httpGet,
		wantGreeting: "hello from the pod",
		// The terminal echoes what it is sent.
		attachTTY: []string{"hi\n", "size 30 90 got hi\n"},
	}
	restart = func(t *testing.T) {
		plain := shell("attach", "cat")
		plain.Stdin, plain.StdinOnce = true, true
		tty := shell("attach-tty", waitForSize(90, 30)+`; read line; echo "size $(stty size) got $line"`)
		tty.Stdin, tty.StdinOnce, tty.TTY = true, true, true
		b.pods.ids["attach"], b.pods.ids["attach-tty"] = run(t, plain), run(t, tty)
		for _, id := range []string{b.pods.ids["attach"], b.pods.ids["attach-tty"]} {
			eventually(t, "an attach container to run", func() bool {
				c, err := rt.Inspect(t.Context(), id)
				return err == nil && c.State == runtime.StateRunning
			})
		}
	}
	restart(t)
	eventually(t, "the stopped container to exit", func() bool {
		c, err := rt.Inspect(t.Context(), stopped)
		return err == nil && c.State == runtime.StateExited
	})
	return b, restart
}

// waitForSize is a shell loop until the terminal is w columns by h rows; the test's deadline
// bounds it.
func waitForSize(w, h int) string {
	// stty fails on a terminal still 0x0.
	return fmt.Sprintf(`while [ "$(stty size 2>/dev/null)" != "%d %d" ]; do sleep 0.05; done`, h, w)
}

// httpGet asks the pod's httpd for / through c and returns the body's first line.
func httpGet(c net.Conn) (string, error) {
	req, _ := http.NewRequest("GET", "http://pod/", nil)
	req.Close = true
	if err := req.Write(c); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return strings.TrimSuffix(string(body), "\n"), err
}

func removeDockerTestContainers(t *testing.T, rt runtime.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := rt.List(ctx, dockerTestLabel)
	if err != nil {
		t.Errorf("list test containers: %v", err)
		return
	}
	for _, c := range cs {
		if err := rt.Remove(ctx, c.ID); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("remove test container %s: %v", c.Name, err)
		}
	}
}

func TestExecDocker(t *testing.T) {
	b, _ := dockerBackend(t)
	testExec(t, b)
}

func TestAttachDocker(t *testing.T) {
	b, restart := dockerBackend(t)
	testAttach(t, b, restart)
}

func TestPortForwardDocker(t *testing.T) {
	b, _ := dockerBackend(t)
	testPortForward(t, b)
}

func TestDisconnectDocker(t *testing.T) {
	b, _ := dockerBackend(t)
	testDisconnect(t, b)
}

// TestDialNetNSDocker dials the sandbox's namespace directly: its loopback has the pod's
// httpd, which the host's loopback does not.
func TestDialNetNSDocker(t *testing.T) {
	b, _ := dockerBackend(t)
	path, err := b.rt.NetNS(t.Context(), b.pods.sandbox)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := streaming.DialNetNS(ctx, path, 8080)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := httpGet(c); got != b.wantGreeting {
		t.Errorf("greeting %q, %v; want %q", got, err, b.wantGreeting)
	}
	if _, err := streaming.DialNetNS(ctx, path, 8081); err == nil {
		t.Error("dial of a port nothing listens on in the pod succeeded")
	}
}
