package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// Options says how to run the apiserver.
type Options struct {
	// Binary is the apiserver executable (see Build).
	Binary string
	// Home is its state directory; it should be empty or absent.
	Home string
	// AMQPURL is the broker the outbox publishes to; empty keeps the
	// apiserver's default.
	AMQPURL string
	// Pprof asks a binary built with pprof to serve profiles on a free port.
	Pprof bool
	// ReadyTimeout bounds the wait for /readyz; zero means one minute.
	ReadyTimeout time.Duration
	// Nodes get identities and kubeconfigs (Process.NodeKubeconfig).
	Nodes []string
	// ExtraArgs are passed to the apiserver as they are.
	ExtraArgs []string
}

// Process is a running apiserver.
type Process struct {
	// Kubeconfig is the admin kubeconfig the apiserver wrote.
	Kubeconfig string
	// EtcdURL is the client URL of its embedded etcd.
	EtcdURL string
	// PprofURL is the base URL of /debug/pprof/ when Options.Pprof was set.
	PprofURL string
	// LogPath holds the apiserver's output.
	LogPath string
	// Pid is the process id.
	Pid int

	home string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, valid once done is closed
}

// Start runs the apiserver and returns once /readyz answers ok. On error the
// process is already stopped.
func Start(ctx context.Context, opts Options) (*Process, error) {
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	// A port found free can be taken before the apiserver binds it (by another process's
	// connection, say): then try again with a new port in its place.
	for attempt := 1; ; attempt++ {
		p, err := start(ctx, opts, ports)
		if err == nil || attempt == 3 {
			return p, err
		}
		m := portTaken.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, err
		}
		taken, _ := strconv.Atoi(m[1])
		i := slices.Index(ports, taken)
		if i < 0 {
			return nil, err
		}
		fresh, ferr := FreePorts(1)
		if ferr != nil {
			return nil, errors.Join(err, ferr)
		}
		ports[i] = fresh[0]
	}
}

// portTaken finds the port of a failed bind in an apiserver's log.
var portTaken = regexp.MustCompile(`:(\d+): bind: address already in use`)

func start(ctx context.Context, opts Options, ports []int) (*Process, error) {
	if err := os.MkdirAll(opts.Home, 0o700); err != nil {
		return nil, fmt.Errorf("create apiserver home: %w", err)
	}
	p := &Process{
		Kubeconfig: filepath.Join(opts.Home, "kubeconfig"),
		EtcdURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		LogPath:    filepath.Join(opts.Home, "apiserver.log"),
		home:       opts.Home,
		done:       make(chan struct{}),
	}
	args := []string{
		"--home", opts.Home,
		"--secure-port", strconv.Itoa(ports[0]),
		"--embedded-etcd-client-url", p.EtcdURL,
		"--embedded-etcd-peer-url", fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
	}
	if opts.AMQPURL != "" {
		args = append(args, "--amqp-url", opts.AMQPURL)
	}
	if len(opts.Nodes) > 0 {
		args = append(args, "--nodes", strings.Join(opts.Nodes, ","))
	}
	if len(opts.ExtraArgs) > 0 {
		args = append(args, opts.ExtraArgs...)
	}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return nil, fmt.Errorf("create apiserver log: %w", err)
	}
	defer logFile.Close() // the child holds its own descriptor
	// Not CommandContext: a cancelled benchmark should still stop the
	// apiserver with SIGTERM (Stop), so etcd closes cleanly.
	p.cmd = exec.Command(opts.Binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = os.Environ()
	if opts.Pprof {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[3])
		p.cmd.Env = append(p.cmd.Env, PprofEnv+"="+addr)
		p.PprofURL = "http://" + addr + "/debug/pprof"
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start apiserver: %w", err)
	}
	p.Pid = p.cmd.Process.Pid
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	if err := p.waitReady(ctx, timeout); err != nil {
		_ = p.Stop(10 * time.Second)
		return nil, fmt.Errorf("%w\n--- apiserver log (%s) ---\n%s", err, p.LogPath, tail(p.LogPath, 20))
	}
	return p, nil
}

// waitReady polls /readyz until it answers, the process exits or the
// deadline passes. The kubeconfig appears before the listener, so both are
// retried.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = p.probe(ctx); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("apiserver exited before it was ready: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("apiserver not ready after %s: %w", timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (p *Process) probe(ctx context.Context) error {
	c, err := p.Client(2 * time.Second)
	if err != nil {
		return err
	}
	body, err := c.Get().AbsPath("/readyz").Do(ctx)
	if err != nil {
		return err
	}
	if string(body) != "ok" {
		return fmt.Errorf("readyz: %q", body)
	}
	return nil
}

// Client returns a new client for the admin user, with its own connections.
// A zero timeout keeps the client's default.
func (p *Process) Client(timeout time.Duration) (*client.Client, error) {
	cfg, err := client.FromKubeconfig(p.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = timeout
	cfg.UserAgent = "minik8s-bench"
	return client.New(cfg)
}

// NodeKubeconfig is the kubeconfig of a node named in Options.Nodes.
func (p *Process) NodeKubeconfig(node string) string {
	return filepath.Join(p.home, "kubeconfigs", "node-"+node+".kubeconfig")
}

// Stop sends SIGTERM, waits up to grace for a clean exit, then kills.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal apiserver: %w", err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("apiserver did not stop within %s; killed", grace)
	}
}

// FreePorts asks the kernel for n free TCP ports on 127.0.0.1. They are free
// when returned, not reserved: another process may take one before use, which
// Start reports as a bind error.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// PublishRootCA writes the ConfigMap kube-root-ca.crt into namespace, as the
// controller-manager's root-ca-cert-publisher does on a full cluster: pods' ServiceAccount
// token volumes read the CA from it, and the bench's clusters run no controller-manager.
func (p *Process) PublishRootCA(ctx context.Context, api *client.Client, namespace string) error {
	ca, err := os.ReadFile(filepath.Join(p.home, "pki", "ca.crt"))
	if err != nil {
		return fmt.Errorf("read the cluster CA: %w", err)
	}
	cms := client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](api)
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: namespace},
		Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("publish kube-root-ca.crt in %s: %w", namespace, err)
	}
	return nil
}
