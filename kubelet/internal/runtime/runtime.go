package runtime

import (
	"context"
	"errors"
	"io"
	"time"
)

// Errors implementations return, matched with errors.Is.
var (
	ErrNotFound      = errors.New("container not found")
	ErrImageNotFound = errors.New("image not found")
	// ErrRegistryUnavailable means an image could not be pulled because no registry answered.
	ErrRegistryUnavailable = errors.New("image registry unavailable")
	// ErrNameInUse means Create was given the name of an existing container.
	ErrNameInUse = errors.New("container name already in use")
	// ErrNotRunning means the call needs a running container (Exec, NetNS).
	ErrNotRunning = errors.New("container not running")
	// ErrInvalidImage means LoadImage was given something the runtime could not load.
	ErrInvalidImage = errors.New("invalid image archive")
)

// State is a container's lifecycle state.
type State string

// The states a container can be in.
const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown"
)

// Container is what the runtime reports about one container.
type Container struct {
	ID      string
	Name    string
	Image   string
	ImageID string
	Labels  map[string]string
	State   State

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int
	OOMKilled  bool
	// Error is the runtime's message for a container that failed to start.
	Error string
	// Pid of the container's main process while running (0 otherwise).
	Pid int
	// WritableLayer is the directory holding what the container wrote to its root file
	// system (overlay's upper directory), where Inspect can tell; "" otherwise.
	WritableLayer string
	// Resources are the limits the container was created with, as the runtime applied them.
	Resources Resources
	// Stdin, StdinOnce and TTY are as created (see ContainerConfig); Inspect sets them.
	Stdin     bool
	StdinOnce bool
	TTY       bool
}

// Mount binds a host path into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// Resources are cgroup limits. Zero means unlimited / runtime default.
type Resources struct {
	// CPUQuota and CPUPeriod in microseconds (limits.cpu = quota/period cores).
	CPUQuota  int64
	CPUPeriod int64
	// CPUShares relative weight (requests.cpu; 1024 per core).
	CPUShares   int64
	MemoryLimit int64 // bytes
}

// ContainerConfig is everything needed to create a container.
type ContainerConfig struct {
	Name       string
	Image      string
	Command    []string // entrypoint override (Kubernetes "command")
	Args       []string // cmd override (Kubernetes "args")
	WorkingDir string
	Env        []string // KEY=value
	Labels     map[string]string
	Hostname   string
	// NetworkMode is "none" for a pod sandbox ("host" for one on the node's network),
	// "container:<sandbox id>" for app containers.
	NetworkMode string
	// IpcMode and UTSMode: "shareable" for the sandbox, "container:<sandbox id>" to join it;
	// UTSMode "host" keeps the node's hostname.
	IpcMode string
	UTSMode string
	// PidMode is "host" to share the node's process namespace (hostPID), "container:<id>" to
	// share that container's (an ephemeral container targeting one), empty for a namespace
	// of the container's own.
	PidMode string
	Mounts  []Mount
	Resources
	// StopSignal overrides the image's; empty keeps it (SIGTERM by default).
	StopSignal string
	// Stdin keeps the main process's standard input open for Attach; StdinOnce closes it when
	// the first attached client closes its stdin. TTY gives the process a terminal.
	Stdin     bool
	StdinOnce bool
	TTY       bool
}

// LogOptions select container output, as `kubectl logs` does.
type LogOptions struct {
	Follow     bool
	Timestamps bool
	// Tail is the number of last lines; negative means all.
	Tail  int64
	Since time.Time
}

// Stats is one sample of a container's resource usage.
type Stats struct {
	Timestamp time.Time
	// CPUUsageNanos is cumulative CPU time.
	CPUUsageNanos uint64
	// MemoryWorkingSetBytes is usage minus inactive file cache, as the kubelet reports it.
	MemoryWorkingSetBytes uint64
}

// ExecResult is the outcome of running a command in a container.
type ExecResult struct {
	ExitCode int
	Output   []byte // stdout and stderr, interleaved, capped by the implementation
}

// TerminalSize is a terminal's size in character cells.
type TerminalSize struct {
	Width, Height uint16
}

// Streams connect a client to a process, for ExecStream and Attach. A nil Stdout or Stderr
// discards that output; a nil Stdin attaches none.
type Streams struct {
	// Stdin is read until it ends, and its end closes the process's standard input. The call
	// may return before that read does, so the caller must make a blocked Read return (close
	// the pipe or connection behind it) once the call has returned.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr is not used with a TTY: a terminal has one output, which goes to Stdout.
	Stderr io.Writer
	TTY    bool
	// Resize carries the terminal's sizes while the process runs (TTY only; nil for none). The
	// caller closes it or stops sending once the call has returned.
	Resize <-chan TerminalSize
}

// Runtime is what the kubelet needs from a container runtime. Every call is bounded by ctx.
type Runtime interface {
	// Version names the runtime and its version, e.g. "docker://20.10.24".
	Version(ctx context.Context) (string, error)
	// List returns containers whose labels include every pair of match (all if empty),
	// running or not. Only ID, Name, Image, ImageID, Labels, State and CreatedAt are sure to
	// be set (Docker's list has no more); Inspect gives the rest.
	List(ctx context.Context, match map[string]string) ([]Container, error)
	Inspect(ctx context.Context, id string) (Container, error)
	Create(ctx context.Context, cfg ContainerConfig) (id string, err error)
	Start(ctx context.Context, id string) error
	// Stop sends the stop signal, then kills after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove deletes a stopped container (forcefully if it still runs).
	Remove(ctx context.Context, id string) error
	ImagePresent(ctx context.Context, image string) (bool, error)
	// ImageID is the engine's id of the image ("sha256:..."), "" when it has none of that
	// name: a node holding an older image under a reused tag is told apart by it.
	ImageID(ctx context.Context, image string) (string, error)
	// LoadImage loads the images of a `docker save` archive (no registry needed) and returns
	// the references it tagged ("name:tag"); ErrInvalidImage when the archive is not one.
	LoadImage(ctx context.Context, archive io.Reader) ([]string, error)
	// Pull fetches an image; ErrRegistryUnavailable when no registry answers,
	// ErrImageNotFound when the registry has no such image.
	Pull(ctx context.Context, image string) error
	Logs(ctx context.Context, id string, opts LogOptions) (io.ReadCloser, error)
	Stats(ctx context.Context, id string) (Stats, error)
	Exec(ctx context.Context, id string, cmd []string) (ExecResult, error)
	// ExecStream runs cmd in a running container connected to streams, and returns its exit
	// code once it has ended and its output has been copied. When ctx ends first it returns
	// ctx's error; the process may still run (Docker cannot kill an exec) but has lost its
	// streams, so its stdin has ended.
	ExecStream(ctx context.Context, id string, cmd []string, streams Streams) (exitCode int, err error)
	// Attach connects streams to the main process of a running container until the container
	// exits (nil) or ctx ends (ctx's error). Its output is the process's from then on. Whether
	// the output is a terminal's is the container's TTY, not streams.TTY; Stdin reaches the
	// process only if the container has Stdin, and its end closes the process's standard input
	// only with StdinOnce.
	Attach(ctx context.Context, id string, streams Streams) error
	// NetNS is the network namespace path of a running container (/proc/<pid>/ns/net).
	NetNS(ctx context.Context, id string) (string, error)
}
