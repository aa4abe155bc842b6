// Package apiservertest runs the real apiserver for components' integration tests: built from
// the workspace, with a private home, free ports and an embedded etcd, stopped when the test
// ends.
package apiservertest

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ReadyTimeout bounds the wait for /readyz; generous, as the machine is shared.
const ReadyTimeout = 90 * time.Second

// Start builds the apiserver, runs it publishing to amqpURL, and waits until /readyz answers.
// It returns the apiserver's home: the admin kubeconfig is home/kubeconfig, the components'
// are under home/kubeconfigs. The last lines of its log are printed when the test fails.
func Start(t *testing.T, amqpURL string) (home string) {
	t.Helper()
	dir := t.TempDir()
	bin := build(t, dir)
	// A port found free can be taken before the apiserver binds it (by another test
	// process's connection, say): then it exits at once, and another try picks new ports.
	for attempt := 1; ; attempt++ {
		home, portTaken := start(t, bin, filepath.Join(dir, "try"+strconv.Itoa(attempt)), amqpURL)
		if !portTaken {
			return home
		}
		if attempt == 3 {
			t.Fatalf("apiserver could not bind its ports in %d tries", attempt)
		}
		t.Logf("apiserver start, try %d: a port was taken before it bound it; trying other ports", attempt)
	}
}

// start runs bin once in dir and waits for /readyz. portTaken reports an apiserver that
// exited before it was ready because a port was in use; any other failure fails the test.
func start(t *testing.T, bin, dir, amqpURL string) (home string, portTaken bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Distinct free ports, released just before the apiserver binds them.
	var ports []int
	var listeners []net.Listener
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	home = filepath.Join(dir, "home")
	logPath := filepath.Join(dir, "apiserver.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--home", home, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[0]),
		"--amqp-url", amqpURL,
		"--embedded-etcd-client-url", "http://127.0.0.1:" + strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-url", "http://127.0.0.1:" + strconv.Itoa(ports[2])}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for _, l := range listeners {
		_ = l.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	tail := func() string {
		data, _ := os.ReadFile(logPath)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		return strings.Join(lines[max(0, len(lines)-30):], "\n")
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(45 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("apiserver did not stop within 45s of SIGTERM; killed")
		}
		if t.Failed() {
			t.Logf("last lines of the apiserver log:\n%s", tail())
		}
	})
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // only polls /readyz; clients verify the CA
	}}
	deadline := time.Now().Add(ReadyTimeout)
	for {
		select {
		case <-exited:
			if log := tail(); strings.Contains(log, "address already in use") {
				return "", true
			}
			t.Fatalf("apiserver exited before it was ready:\n%s", tail())
		default:
		}
		if resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0])); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return home, false
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("apiserver not ready after %s:\n%s", ReadyTimeout, tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// build compiles the apiserver into dir, in a workspace of just the apiserver and shared
// modules (found through the test's go.work), so versions another module pulls into the full
// workspace cannot break this build.
func build(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "env", "GOWORK").Output()
	gowork := strings.TrimSpace(string(out))
	if err != nil || gowork == "" || gowork == "off" {
		t.Fatalf("apiservertest needs the project's go.work (go env GOWORK = %q, %v)", gowork, err)
	}
	root := filepath.Dir(gowork)
	work := filepath.Join(dir, "go.work")
	if err := os.WriteFile(work, []byte("go 1.26.8\n\nuse (\n\t"+filepath.Join(root, "apiserver")+"\n\t"+filepath.Join(root, "shared")+"\n)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if sum, err := os.ReadFile(filepath.Join(root, "go.work.sum")); err == nil {
		_ = os.WriteFile(work+".sum", sum, 0o600)
	}
	bin := filepath.Join(dir, "apiserver")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "minik8s.io/apiserver/cmd/apiserver")
	cmd.Env = append(os.Environ(), "GOWORK="+work)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build apiserver: %v\n%s", err, out)
	}
	return bin
}
