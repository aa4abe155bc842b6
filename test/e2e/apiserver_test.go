package e2e

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// Generous bounds: the machine is shared with other builds and tests.
const (
	readyTimeout = 90 * time.Second
	stopTimeout  = 45 * time.Second
)

// requireIntegration skips under -short and fails clearly when RabbitMQ is unreachable or
// the binaries did not build: every test here needs all three.
func requireIntegration(t *testing.T) string {
	t.Helper()
	url := amqptest.Require(t)
	requireBinaries(t)
	return url
}

// apiserver is one apiserver process. Its home and ports stay fixed across restarts, so a
// restart finds the same certificates, tokens and etcd data.
type apiserver struct {
	home string
	// name tells apart servers sharing a home (their logs); etcdServers, when set, points
	// the server at an external etcd instead of its embedded one.
	name, etcdServers        string
	port, etcdPort, peerPort int
	cmd                      *exec.Cmd
	exited                   chan struct{} // closed when cmd has been waited for
	waitErr                  error

	// extraArgs are appended to the command line, e.g. --nodes for the kubelet tests.
	extraArgs []string
	// bindAddress (default 127.0.0.1) is where it listens and what its kubeconfigs name;
	// amqpURL (default amqptest.URL()) is the broker its outbox publishes to.
	bindAddress, amqpURL string
	// started is set once a start succeeded: from then on its ports are fixed.
	started bool
}

// newAPIServer picks free ports for a server whose state lives in home. It starts nothing.
func newAPIServer(home string) (*apiserver, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	return &apiserver{home: home, port: ports[0], etcdPort: ports[1], peerPort: ports[2]}, nil
}

// freePorts asks the kernel for n distinct free ports. They are released before use, so
// another process could take one in between; on a test machine that is rare enough.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func (s *apiserver) kubeconfig() string { return filepath.Join(s.home, "kubeconfig") }
func (s *apiserver) logPath() string    { return filepath.Join(s.home, "apiserver"+s.name+".log") }

// etcdEndpoints are the etcd client URLs the server uses.
func (s *apiserver) etcdEndpoints() []string {
	if s.etcdServers != "" {
		return strings.Split(s.etcdServers, ",")
	}
	return []string{s.etcdURL()}
}

func (s *apiserver) etcdURL() string {
	if s.etcdServers != "" {
		return strings.Split(s.etcdServers, ",")[0]
	}
	return "http://127.0.0.1:" + strconv.Itoa(s.etcdPort)
}
func (s *apiserver) pid() int { return s.cmd.Process.Pid }

func (s *apiserver) host() string {
	if s.bindAddress != "" {
		return s.bindAddress
	}
	return "127.0.0.1"
}

// start runs the apiserver and waits until /readyz answers ok. A first start tries again
// when one of its ports, found free, was taken before the apiserver bound it (by another
// test process's connection, say), with a new port in its place; later starts keep the
// ports, as a restart must.
func (s *apiserver) start(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := s.startOnce(ctx)
		if err == nil {
			s.started = true
			return nil
		}
		if s.started || attempt == 3 {
			return err
		}
		m := portTaken.FindStringSubmatch(err.Error())
		if m == nil {
			return err
		}
		taken, _ := strconv.Atoi(m[1])
		fresh, ferr := freePorts(1)
		if ferr != nil {
			return errors.Join(err, ferr)
		}
		switch taken {
		case s.port:
			s.port = fresh[0]
		case s.etcdPort:
			s.etcdPort = fresh[0]
		case s.peerPort:
			s.peerPort = fresh[0]
		default:
			return err
		}
	}
}

// portTaken finds the port of a failed bind in an apiserver's log.
var portTaken = regexp.MustCompile(`:(\d+): bind: address already in use`)

func (s *apiserver) startOnce(ctx context.Context) error {
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open apiserver log: %w", err)
	}
	// The etcd history must outlive the test: the bus test reads it back. A compaction
	// would make that read fail, so the compactor is off.
	amqpURL := s.amqpURL
	if amqpURL == "" {
		amqpURL = amqptest.URL()
	}
	args := []string{
		"--home", s.home,
		"--bind-address", s.host(),
		"--secure-port", strconv.Itoa(s.port),
		"--amqp-url", amqpURL,
		"--compact-interval", "0",
	}
	if s.etcdServers != "" {
		args = append(args, "--etcd-servers", s.etcdServers)
	} else {
		args = append(args, "--embedded-etcd-client-url", s.etcdURL(),
			"--embedded-etcd-peer-url", "http://127.0.0.1:"+strconv.Itoa(s.peerPort))
	}
	args = append(args, s.extraArgs...)
	cmd := exec.Command(bins.apiserver, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group: a Ctrl-C on the test does not hit it before the test stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start apiserver: %w", err)
	}
	s.cmd, s.exited, s.waitErr = cmd, make(chan struct{}), nil
	go func() {
		s.waitErr = cmd.Wait()
		_ = logf.Close()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		_ = s.kill()
		return fmt.Errorf("%w\nlast lines of %s:\n%s", err, s.logPath(), s.logTail(40))
	}
	return nil
}

// waitReady polls /readyz, which answers without a token, until it says ok.
func (s *apiserver) waitReady(ctx context.Context) error {
	// The CA is created by the server itself, so checking the chain here would only race
	// with its first start; the kubectls below do verify it.
	hc := &http.Client{
		Timeout:   3 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see above
	}
	url := "https://" + net.JoinHostPort(s.host(), strconv.Itoa(s.port)) + "/readyz"
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("apiserver exited before it was ready: %v", s.waitErr)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := hc.Get(url)
		if err == nil {
			body := make([]byte, 64)
			n, _ := resp.Body.Read(body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body[:n])) == "ok" {
				return nil
			}
			err = fmt.Errorf("readyz: %s: %s", resp.Status, body[:n])
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("apiserver not ready after %s: %v", readyTimeout, last)
}

// stop sends SIGTERM and waits for a clean exit; a server that hangs is killed and
// reported.
func (s *apiserver) stop() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.exited:
		return fmt.Errorf("apiserver had already exited: %v", s.waitErr)
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("sigterm apiserver: %w", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		_ = s.kill()
		return fmt.Errorf("apiserver did not exit within %s of SIGTERM; killed", stopTimeout)
	}
	var exit *exec.ExitError
	if s.waitErr != nil && !errors.As(s.waitErr, &exit) {
		return fmt.Errorf("wait apiserver: %w", s.waitErr)
	}
	if s.waitErr != nil {
		return fmt.Errorf("apiserver exited with %v after SIGTERM\nlast lines of its log:\n%s", s.waitErr, s.logTail(20))
	}
	return nil
}

// kill is the last resort, for a server that failed to start or stop.
func (s *apiserver) kill() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	err := s.cmd.Process.Kill()
	<-s.exited
	return err
}

// logTail returns the last n lines of the server's log, for failure messages.
func (s *apiserver) logTail(n int) string {
	data, err := os.ReadFile(s.logPath())
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// startServer starts a private apiserver for one test and stops it when the test ends.
func startServer(t *testing.T) *apiserver {
	t.Helper()
	srv, err := newAPIServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A vhost of its own: no other cluster's consumer sees this one's changes.
	srv.amqpURL = amqptest.VHost(t)
	if err := srv.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil && !strings.Contains(err.Error(), "already exited") {
			t.Errorf("stop apiserver: %v", err)
		}
		if t.Failed() {
			t.Logf("last lines of the apiserver log:\n%s", srv.logTail(30))
		}
	})
	return srv
}
