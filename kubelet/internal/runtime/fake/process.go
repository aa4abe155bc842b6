package fake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"minik8s.io/kubelet/internal/runtime"
)

// ExecOutputLimit caps the output Exec keeps, as the Docker adapter does.
const ExecOutputLimit = 64 << 10

// ErrOOMKilled is what Process.Alloc returns when the allocation went over the container's
// memory limit; the container is then exited with OOMKilled set.
var ErrOOMKilled = errors.New("out of memory")

// Process is the simulated process a Program runs as: its arguments and environment, the
// container's hostname and network namespace, its output, and the signals Stop sends.
type Process struct {
	ctx    context.Context
	cancel context.CancelFunc
	r      *Runtime
	ct     *container
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	tty    bool

	mu        sync.Mutex
	signals   chan string
	listeners []*listener
	size      runtime.TerminalSize
}

func (r *Runtime) newProcess(ct *container, args []string, stdin io.Reader, stdout, stderr io.Writer, tty bool) *Process {
	ctx, cancel := context.WithCancel(context.Background())
	return &Process{ctx: ctx, cancel: cancel, r: r, ct: ct, args: args, stdin: stdin, stdout: stdout,
		stderr: stderr, tty: tty}
}

// Args is the full command line: Command then Args of the container (or the Exec command).
func (p *Process) Args() []string { return slices.Clone(p.args) }

// Env is the container's environment, KEY=value.
func (p *Process) Env() []string { return slices.Clone(p.ct.cfg.Env) }

// Hostname is the container's hostname, shared with the container whose UTS or network
// namespace it joined.
func (p *Process) Hostname() string {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	return p.ct.host
}

// Stdin is the process's standard input: what attached clients send to a container created
// with Stdin, the client's stdin of an ExecStream, or else an empty input.
func (p *Process) Stdin() io.Reader { return p.stdin }

// TerminalSize is the size of the process's terminal; ok is false without one.
func (p *Process) TerminalSize() (width, height int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.size.Width), int(p.size.Height), p.tty
}

func (p *Process) resize(sz runtime.TerminalSize) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.size = sz
}

// Stdout is the process's standard output: the container log, or the Exec result.
func (p *Process) Stdout() io.Writer { return p.stdout }

// Stderr is the process's standard error.
func (p *Process) Stderr() io.Writer { return p.stderr }

// Signals subscribes the process to its stop signal: after the first call Stop delivers the
// signal here (e.g. "SIGTERM") and waits out the grace period instead of ending the container.
func (p *Process) Signals() <-chan string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signals == nil {
		p.signals = make(chan string, 4)
	}
	return p.signals
}

func (p *Process) deliver(sig string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.signals == nil {
		return false
	}
	select {
	case p.signals <- sig:
	default:
	}
	return true
}

// Alloc charges n bytes to the container's memory. Going over its memory limit OOM-kills the
// container (exit code 137, OOMKilled) and returns ErrOOMKilled.
func (p *Process) Alloc(n int64) error {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.ct.memory += n
	if limit := p.ct.cfg.MemoryLimit; limit > 0 && p.ct.memory > limit {
		if p.ct.c.State == runtime.StateRunning {
			p.r.stopLocked(p.ct, 137, true)
		}
		return ErrOOMKilled
	}
	return nil
}

// Burn charges d of CPU time to the container.
func (p *Process) Burn(d time.Duration) {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.ct.cpu += d
}

// Listen opens a TCP listener in the container's network namespace. Only the port matters:
// every address of a namespace is reachable from inside it, and nothing outside is.
func (p *Process) Listen(addr string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	ns := p.r.nets[p.ct.netKey]
	if ns == nil {
		ns = &netns{listeners: map[string]*listener{}}
		p.r.nets[p.ct.netKey] = ns
	}
	if ns.listeners[port] != nil {
		return nil, fmt.Errorf("listen %s: address already in use", addr)
	}
	l := &listener{addr: fakeAddr(addr), conns: make(chan net.Conn), closed: make(chan struct{}),
		mu: &p.r.mu, ns: ns, port: port}
	ns.listeners[port] = l
	p.mu.Lock()
	p.listeners = append(p.listeners, l)
	p.mu.Unlock()
	return l, nil
}

// Dial connects to a listener in the container's network namespace.
func (p *Process) Dial(ctx context.Context, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	p.r.mu.Lock()
	key := p.ct.netKey
	p.r.mu.Unlock()
	return p.r.dial(ctx, key, addr, port)
}

// dial connects to the listener on port in the network namespace netKey.
func (r *Runtime) dial(ctx context.Context, netKey, addr, port string) (net.Conn, error) {
	r.mu.Lock()
	var l *listener
	if ns := r.nets[netKey]; ns != nil {
		l = ns.listeners[port]
	}
	r.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, fmt.Errorf("dial %s: connection refused", addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// kill ends the process and closes its listeners; locked says the caller holds r.mu.
func (p *Process) kill(locked bool) {
	p.cancel()
	p.mu.Lock()
	ls := p.listeners
	p.listeners = nil
	p.mu.Unlock()
	for _, l := range ls {
		l.close(locked)
	}
}

type netns struct {
	listeners map[string]*listener // by port
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

type listener struct {
	addr   fakeAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	mu     *sync.Mutex // the runtime's, guarding ns
	ns     *netns
	port   string
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.close(false)
	return nil
}

func (l *listener) close(locked bool) {
	l.once.Do(func() {
		close(l.closed)
		if !locked {
			l.mu.Lock()
			defer l.mu.Unlock()
		}
		if l.ns.listeners[l.port] == l {
			delete(l.ns.listeners, l.port)
		}
	})
}

func (l *listener) Addr() net.Addr { return l.addr }

// Exec implements runtime.Runtime. The result is SetExec's if set; otherwise the image's
// Program runs with cmd as its arguments; otherwise the command succeeds with no output.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string) (runtime.ExecResult, error) {
	r.mu.Lock()
	if err := r.recordLocked("Exec", id, cmd); err != nil {
		r.mu.Unlock()
		return runtime.ExecResult{}, err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		r.mu.Unlock()
		return runtime.ExecResult{}, fmt.Errorf("exec: %w", err)
	}
	if ct.c.State != runtime.StateRunning {
		r.mu.Unlock()
		return runtime.ExecResult{}, fmt.Errorf("exec in %s: %w", id, runtime.ErrNotRunning)
	}
	if ct.exec != nil {
		res := *ct.exec
		res.Output = bytes.Clone(res.Output)
		r.mu.Unlock()
		return res, nil
	}
	prog := r.programs[normalize(ct.cfg.Image)]
	if prog == nil {
		r.mu.Unlock()
		return runtime.ExecResult{}, ctx.Err()
	}
	out := &cappedBuffer{limit: ExecOutputLimit}
	p := r.newProcess(ct, cmd, strings.NewReader(""), out, out, false)
	r.mu.Unlock()

	stop := context.AfterFunc(ctx, func() { p.kill(false) })
	defer stop()
	code := prog(p.ctx, p)
	p.kill(false)
	if err := ctx.Err(); err != nil {
		return runtime.ExecResult{}, err
	}
	return runtime.ExecResult{ExitCode: code, Output: out.Bytes()}, nil
}

// cappedBuffer keeps the first limit bytes and silently drops the rest, so a chatty command
// cannot grow the kubelet's memory.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
