package fake

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/shared/workqueue/clock"
)

// Version is what the fake's Version reports.
const Version = "fake://1.0.0"

// Call is one recorded call. Arg is the container id, the image, or the new container's name.
type Call struct {
	Method string
	Arg    string
	// Cmd is the command of an Exec.
	Cmd []string
}

// Program simulates the main process of containers made from one image (see SetProgram). It
// returns the exit code; it must return soon after ctx is done, which happens when the
// container is killed.
type Program func(ctx context.Context, p *Process) int

type container struct {
	c       runtime.Container
	cfg     runtime.ContainerConfig
	seq     int
	netKey  string
	host    string
	proc    *Process
	logs    []logEntry
	partial map[string][]byte
	// changed is closed and replaced whenever logs grow or the container stops, so followers
	// and Stop can wait without polling.
	changed chan struct{}
	stats   *runtime.Stats
	exec    *runtime.ExecResult
	memory  int64
	cpu     time.Duration
	// stdin feeds the running main process's standard input when the container has Stdin.
	stdin *io.PipeWriter
	// attached are the outputs of clients attached to the running main process.
	attached []*attachment
}

// Runtime is the in-memory runtime. The zero value is not usable; call New.
type Runtime struct {
	clock clock.Clock

	mu         sync.Mutex
	containers map[string]*container
	images     map[string]bool
	registry   map[string]bool
	registryUp bool
	programs   map[string]Program
	// executables lists, for images that declare them, the files a command may name.
	executables map[string][]string
	failNext    map[string][]error
	calls       []Call
	seq         int
	pid         int
	nets        map[string]*netns
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns an empty runtime: no images, no containers, no registry. clk stamps container
// times and log lines and times Stop's grace period.
func New(clk clock.Clock) *Runtime {
	return &Runtime{
		clock:       clk,
		containers:  map[string]*container{},
		images:      map[string]bool{},
		registry:    map[string]bool{},
		programs:    map[string]Program{},
		executables: map[string][]string{},
		failNext:    map[string][]error{},
		nets:        map[string]*netns{},
	}
}

// AddImage makes an image present locally.
func (r *Runtime) AddImage(image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.images[normalize(image)] = true
}

// RemoveImage makes an image absent locally.
func (r *Runtime) RemoveImage(image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.images, normalize(image))
}

// AddRegistryImage makes a registry answer and hold image, so Pull of it succeeds. Without
// any, Pull fails with ErrRegistryUnavailable as on a machine without a registry.
func (r *Runtime) AddRegistryImage(image string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registryUp = true
	r.registry[normalize(image)] = true
}

// SetProgram makes containers of image run p as their main process (and for Exec). Containers
// of images without a program run until stopped or until the test calls Exit.
func (r *Runtime) SetProgram(image string, p Program) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.programs[normalize(image)] = p
}

// SetExecutables says which files of image a container's command may run (absolute paths, also
// found by base name as on $PATH). Starting a container whose command names another fails as
// Docker fails it: the container stays created, with the runtime's error and exit code 127.
// Images without a list run any command.
func (r *Runtime) SetExecutables(image string, paths ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.executables[normalize(image)] = slices.Clone(paths)
}

// missingExecutableLocked returns the error of starting ct when its command names no file of
// its image.
func (r *Runtime) missingExecutableLocked(ct *container) error {
	files, ok := r.executables[normalize(ct.cfg.Image)]
	argv := append(slices.Clone(ct.cfg.Command), ct.cfg.Args...)
	if !ok || len(argv) == 0 {
		return nil
	}
	name := argv[0]
	for _, f := range files {
		if f == name || (!strings.Contains(name, "/") && path.Base(f) == name) {
			return nil
		}
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("OCI runtime create failed: exec: %q: stat %s: no such file or directory", name, name)
	}
	return fmt.Errorf("OCI runtime create failed: exec: %q: executable file not found in $PATH", name)
}

// FailNext makes the next call of method (e.g. "Create") return err instead of doing anything.
func (r *Runtime) FailNext(method string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failNext[method] = append(r.failNext[method], err)
}

// Calls returns the calls made so far, oldest first.
func (r *Runtime) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// ResetCalls forgets the recorded calls.
func (r *Runtime) ResetCalls() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
}

// Exit ends a running container as if its process exited with code (or the kernel OOM-killed
// it). It fails with ErrNotFound for an unknown id and ErrNotRunning if it is not running.
func (r *Runtime) Exit(id string, code int, oomKilled bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ct, err := r.getLocked(id)
	if err != nil {
		return err
	}
	if ct.c.State != runtime.StateRunning {
		return fmt.Errorf("exit %s: %w", id, runtime.ErrNotRunning)
	}
	r.stopLocked(ct, code, oomKilled)
	return nil
}

// SetStats sets what Stats reports for a container.
func (r *Runtime) SetStats(id string, s runtime.Stats) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ct, err := r.getLocked(id)
	if err != nil {
		return err
	}
	ct.stats = &s
	return nil
}

// SetExec sets the result of every later Exec in a container, whatever the command.
func (r *Runtime) SetExec(id string, res runtime.ExecResult) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ct, err := r.getLocked(id)
	if err != nil {
		return err
	}
	ct.exec = &res
	return nil
}

// WriteLog appends text to a container's output on stream ("stdout" or "stderr"), one log
// line per newline-terminated line, stamped with the clock.
func (r *Runtime) WriteLog(id, stream, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ct, err := r.getLocked(id)
	if err != nil {
		return err
	}
	r.writeLocked(ct, stream, []byte(text))
	return nil
}

func (r *Runtime) recordLocked(method, arg string, cmd []string) error {
	r.calls = append(r.calls, Call{Method: method, Arg: arg, Cmd: slices.Clone(cmd)})
	if errs := r.failNext[method]; len(errs) > 0 {
		r.failNext[method] = errs[1:]
		return errs[0]
	}
	return nil
}

func (r *Runtime) getLocked(id string) (*container, error) {
	if ct, ok := r.containers[id]; ok {
		return ct, nil
	}
	// Docker accepts names and unique id prefixes wherever it takes an id.
	var found *container
	for cid, ct := range r.containers {
		if ct.c.Name == id || (len(id) >= 4 && strings.HasPrefix(cid, id)) {
			if found != nil {
				return nil, fmt.Errorf("container %s is ambiguous: %w", id, runtime.ErrNotFound)
			}
			found = ct
		}
	}
	if found == nil {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotFound)
	}
	return found, nil
}

// Version implements runtime.Runtime.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Version", "", nil); err != nil {
		return "", err
	}
	return Version, ctx.Err()
}

// List implements runtime.Runtime; newest containers come first, as from Docker.
func (r *Runtime) List(ctx context.Context, match map[string]string) ([]runtime.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("List", "", nil); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var cts []*container
	for _, ct := range r.containers {
		if hasLabels(ct.c.Labels, match) {
			cts = append(cts, ct)
		}
	}
	slices.SortFunc(cts, func(a, b *container) int { return b.seq - a.seq })
	out := make([]runtime.Container, 0, len(cts))
	for _, ct := range cts {
		out = append(out, snapshot(ct))
	}
	return out, nil
}

func hasLabels(labels, match map[string]string) bool {
	for k, v := range match {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func snapshot(ct *container) runtime.Container {
	c := ct.c
	c.Labels = maps.Clone(ct.c.Labels)
	return c
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, id string) (runtime.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Inspect", id, nil); err != nil {
		return runtime.Container{}, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Container{}, err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		return runtime.Container{}, fmt.Errorf("inspect: %w", err)
	}
	return snapshot(ct), nil
}

// Create implements runtime.Runtime.
func (r *Runtime) Create(ctx context.Context, cfg runtime.ContainerConfig) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Create", cfg.Name, nil); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !r.images[normalize(cfg.Image)] {
		return "", fmt.Errorf("create %s: image %s: %w", cfg.Name, cfg.Image, runtime.ErrImageNotFound)
	}
	r.seq++
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("fake_%d", r.seq)
	}
	for _, ct := range r.containers {
		if ct.c.Name == name {
			return "", fmt.Errorf("create %s: %w", name, runtime.ErrNameInUse)
		}
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "container-%d-%s", r.seq, name))
	id := hex.EncodeToString(sum[:])
	imgSum := sha256.Sum256([]byte(normalize(cfg.Image)))
	cfg.Labels = maps.Clone(cfg.Labels)
	r.containers[id] = &container{
		seq: r.seq,
		cfg: cfg,
		c: runtime.Container{
			ID:        id,
			Name:      name,
			Image:     cfg.Image,
			ImageID:   "sha256:" + hex.EncodeToString(imgSum[:]),
			Labels:    maps.Clone(cfg.Labels),
			State:     runtime.StateCreated,
			CreatedAt: r.clock.Now(),
			Resources: cfg.Resources,
			Stdin:     cfg.Stdin,
			StdinOnce: cfg.Stdin && cfg.StdinOnce,
			TTY:       cfg.TTY,
		},
		partial: map[string][]byte{},
		changed: make(chan struct{}),
	}
	return id, nil
}

// Start implements runtime.Runtime. Starting a running container does nothing; starting an
// exited one runs it again, as Docker does.
func (r *Runtime) Start(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Start", id, nil); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if ct.c.State == runtime.StateRunning {
		return nil
	}
	if err := r.missingExecutableLocked(ct); err != nil {
		ct.c.ExitCode, ct.c.Error = 127, err.Error()
		return fmt.Errorf("start container: %w", err)
	}
	ct.netKey, ct.host = ct.c.ID, ct.cfg.Hostname
	if ct.host == "" {
		ct.host = ct.c.ID[:12]
	}
	if target, ok := strings.CutPrefix(ct.cfg.NetworkMode, "container:"); ok {
		peer, err := r.runningPeerLocked(target)
		if err != nil {
			return fmt.Errorf("start %s: join network of %s: %w", id, target, err)
		}
		// Joining a network also takes the peer's hostname, as Docker does.
		ct.netKey, ct.host = peer.netKey, peer.host
	}
	for _, mode := range []string{ct.cfg.IpcMode, ct.cfg.UTSMode, ct.cfg.PidMode} {
		if target, ok := strings.CutPrefix(mode, "container:"); ok {
			peer, err := r.runningPeerLocked(target)
			if err != nil {
				return fmt.Errorf("start %s: join namespace of %s: %w", id, target, err)
			}
			if mode == ct.cfg.UTSMode {
				ct.host = peer.host
			}
		}
	}
	r.pid++
	ct.c.State = runtime.StateRunning
	ct.c.Pid = 1000 + r.pid
	ct.c.StartedAt = r.clock.Now()
	ct.c.FinishedAt = time.Time{}
	ct.c.ExitCode, ct.c.OOMKilled, ct.c.Error = 0, false, ""
	ct.memory, ct.cpu = 0, 0
	if prog := r.programs[normalize(ct.cfg.Image)]; prog != nil {
		args := append(slices.Clone(ct.cfg.Command), ct.cfg.Args...)
		// Without Stdin the process reads an empty input, as from /dev/null.
		var stdin io.Reader = strings.NewReader("")
		if ct.cfg.Stdin {
			pr, pw := io.Pipe()
			stdin, ct.stdin = pr, pw
		}
		stderr := streamWriter{r, ct, "stderr"}
		if ct.cfg.TTY {
			// A terminal has one output.
			stderr.stream = "stdout"
		}
		p := r.newProcess(ct, args, stdin, streamWriter{r, ct, "stdout"}, stderr, ct.cfg.TTY)
		ct.proc = p
		go r.run(ct, p, prog)
	}
	return nil
}

func (r *Runtime) runningPeerLocked(id string) (*container, error) {
	peer, err := r.getLocked(id)
	if err != nil {
		return nil, err
	}
	if peer.c.State != runtime.StateRunning {
		return nil, fmt.Errorf("container %s: %w", id, runtime.ErrNotRunning)
	}
	return peer, nil
}

func (r *Runtime) run(ct *container, p *Process, prog Program) {
	code := prog(p.ctx, p)
	r.mu.Lock()
	defer r.mu.Unlock()
	// A killed process's own return does not count: the kill already decided the exit code.
	if ct.proc == p {
		r.stopLocked(ct, code, false)
	}
}

// stopLocked ends the running container with code.
func (r *Runtime) stopLocked(ct *container, code int, oom bool) {
	if p := ct.proc; p != nil {
		ct.proc = nil
		p.kill(true)
	}
	if ct.stdin != nil {
		// Unblocks attached clients still writing to the process's stdin.
		ct.stdin.CloseWithError(io.ErrClosedPipe)
		ct.stdin = nil
	}
	ct.attached = nil
	for stream := range ct.partial {
		if len(ct.partial[stream]) > 0 {
			r.writeLocked(ct, stream, []byte("\n"))
		}
	}
	ct.c.State = runtime.StateExited
	ct.c.ExitCode, ct.c.OOMKilled = code, oom
	ct.c.FinishedAt = r.clock.Now()
	ct.c.Pid = 0
	r.notifyLocked(ct)
}

func (r *Runtime) notifyLocked(ct *container) {
	close(ct.changed)
	ct.changed = make(chan struct{})
}

// Stop implements runtime.Runtime. The container's stop signal ends it at once with 128+signal
// unless its Program listens on Process.Signals; then the program has grace to exit before it
// is killed with 137.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	r.mu.Lock()
	if err := r.recordLocked("Stop", id, nil); err != nil {
		r.mu.Unlock()
		return err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		r.mu.Unlock()
		return fmt.Errorf("stop: %w", err)
	}
	if ct.c.State != runtime.StateRunning {
		r.mu.Unlock()
		return nil
	}
	sig := ct.cfg.StopSignal
	if sig == "" {
		sig = "SIGTERM"
	}
	p := ct.proc
	if p == nil || !p.deliver(sig) {
		r.stopLocked(ct, 128+signalNumber(sig), false)
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()

	timer := r.clock.NewTimer(grace)
	defer timer.Stop()
	for {
		r.mu.Lock()
		if ct.proc != p {
			r.mu.Unlock()
			return nil
		}
		changed := ct.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C():
			r.mu.Lock()
			if ct.proc == p {
				r.stopLocked(ct, 137, false)
			}
			r.mu.Unlock()
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Remove implements runtime.Runtime.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Remove", id, nil); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	if ct.c.State == runtime.StateRunning {
		r.stopLocked(ct, 137, false)
	}
	delete(r.containers, ct.c.ID)
	delete(r.nets, ct.c.ID)
	return nil
}

// ImagePresent implements runtime.Runtime.
func (r *Runtime) ImagePresent(ctx context.Context, image string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("ImagePresent", image, nil); err != nil {
		return false, err
	}
	return r.images[normalize(image)], ctx.Err()
}

// ImageID implements runtime.Runtime: a present image's id is the sha256 of its normalized
// name.
func (r *Runtime) ImageID(ctx context.Context, image string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("ImageID", image, nil); err != nil {
		return "", err
	}
	if !r.images[normalize(image)] {
		return "", ctx.Err()
	}
	sum := sha256.Sum256([]byte(normalize(image)))
	return "sha256:" + hex.EncodeToString(sum[:]), ctx.Err()
}

// LoadImage implements runtime.Runtime: it reads the archive's manifest.json, as `docker
// load` does, and adds the images it tags.
func (r *Runtime) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	r.mu.Lock()
	err := r.recordLocked("LoadImage", "", nil)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var manifest []struct{ RepoTags []string }
	found := false
	tr := tar.NewReader(archive)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("load image: %w: %v", runtime.ErrInvalidImage, err)
		}
		if h.Name == "manifest.json" {
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				return nil, fmt.Errorf("load image: %w: manifest.json: %v", runtime.ErrInvalidImage, err)
			}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("load image: %w: no manifest.json", runtime.ErrInvalidImage)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var loaded []string
	for _, m := range manifest {
		for _, ref := range m.RepoTags {
			r.images[normalize(ref)] = true
			loaded = append(loaded, ref)
		}
	}
	return loaded, nil
}

// Pull implements runtime.Runtime.
func (r *Runtime) Pull(ctx context.Context, image string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Pull", image, nil); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case !r.registryUp:
		return fmt.Errorf("pull %s: %w", image, runtime.ErrRegistryUnavailable)
	case !r.registry[normalize(image)]:
		return fmt.Errorf("pull %s: %w", image, runtime.ErrImageNotFound)
	}
	r.images[normalize(image)] = true
	return nil
}

// Stats implements runtime.Runtime. A Program's Alloc and Burn show up here unless SetStats
// overrides them.
func (r *Runtime) Stats(ctx context.Context, id string) (runtime.Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Stats", id, nil); err != nil {
		return runtime.Stats{}, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Stats{}, err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("stats: %w", err)
	}
	s := runtime.Stats{CPUUsageNanos: uint64(ct.cpu), MemoryWorkingSetBytes: uint64(ct.memory)}
	if ct.stats != nil {
		s = *ct.stats
	}
	if s.Timestamp.IsZero() {
		s.Timestamp = r.clock.Now()
	}
	return s, nil
}
