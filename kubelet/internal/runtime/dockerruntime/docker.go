package dockerruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/strslice"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"minik8s.io/kubelet/internal/runtime"
)

// Runtime is runtime.Runtime on a Docker daemon.
type Runtime struct {
	cli *client.Client
}

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a runtime talking to the daemon at host (e.g. "unix:///run/minik8s/node1/docker.sock");
// an empty host means the environment's DOCKER_HOST or the default socket. It does no I/O: the
// API version is negotiated on the first call.
func New(host string) (*Runtime, error) {
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for %q: %w", host, err)
	}
	return &Runtime{cli: cli}, nil
}

// Close releases the client's idle connections.
func (r *Runtime) Close() error { return r.cli.Close() }

// Version implements runtime.Runtime.
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.cli.ServerVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("docker version: %w", err)
	}
	return "docker://" + v.Version, nil
}

// List implements runtime.Runtime. Docker's list carries no times or exit codes beyond
// creation, so those fields are zero; Inspect fills them.
func (r *Runtime) List(ctx context.Context, match map[string]string) ([]runtime.Container, error) {
	args := filters.NewArgs()
	for k, v := range match {
		args.Add("label", k+"="+v)
	}
	list, err := r.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: args})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out := make([]runtime.Container, 0, len(list))
	for _, c := range list {
		name := ""
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, runtime.Container{
			ID:        c.ID,
			Name:      name,
			Image:     c.Image,
			ImageID:   c.ImageID,
			Labels:    c.Labels,
			State:     state(c.State),
			CreatedAt: time.Unix(c.Created, 0),
		})
	}
	return out, nil
}

func state(s string) runtime.State {
	switch s {
	case "created":
		return runtime.StateCreated
	case "running", "paused":
		return runtime.StateRunning
	case "exited", "dead":
		return runtime.StateExited
	default:
		return runtime.StateUnknown
	}
}

// Inspect implements runtime.Runtime.
func (r *Runtime) Inspect(ctx context.Context, id string) (runtime.Container, error) {
	j, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return runtime.Container{}, fmt.Errorf("inspect container %s: %w", id, mapErr(err))
	}
	c := runtime.Container{
		ID:        j.ID,
		Name:      strings.TrimPrefix(j.Name, "/"),
		ImageID:   j.Image,
		CreatedAt: parseTime(j.Created),
		State:     runtime.StateUnknown,
	}
	if j.Config != nil {
		c.Image = j.Config.Image
		c.Labels = j.Config.Labels
		c.Stdin, c.StdinOnce, c.TTY = j.Config.OpenStdin, j.Config.StdinOnce, j.Config.Tty
	}
	if j.HostConfig != nil {
		c.Resources = runtime.Resources{
			CPUQuota:    j.HostConfig.CPUQuota,
			CPUPeriod:   j.HostConfig.CPUPeriod,
			CPUShares:   j.HostConfig.CPUShares,
			MemoryLimit: j.HostConfig.Memory,
		}
	}
	if s := j.State; s != nil {
		c.State = state(s.Status)
		c.StartedAt = parseTime(s.StartedAt)
		c.FinishedAt = parseTime(s.FinishedAt)
		c.ExitCode = s.ExitCode
		c.OOMKilled = s.OOMKilled
		c.Error = s.Error
		c.Pid = s.Pid
	}
	c.WritableLayer = j.GraphDriver.Data["UpperDir"]
	return c, nil
}

// parseTime reads Docker's RFC 3339 times, where "0001-01-01T00:00:00Z" means never.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// Create implements runtime.Runtime. Docker cannot join another container's UTS namespace, but
// joining its network namespace gives the joiner the same hostname, which is what a pod needs;
// so UTS modes other than "host" are left to the network mode, and Hostname is dropped when
// joining a network (Docker rejects both together).
func (r *Runtime) Create(ctx context.Context, cfg runtime.ContainerConfig) (string, error) {
	joins := strings.HasPrefix(cfg.NetworkMode, "container:")
	cc := &container.Config{
		Image:      cfg.Image,
		Env:        cfg.Env,
		WorkingDir: cfg.WorkingDir,
		Labels:     cfg.Labels,
		StopSignal: cfg.StopSignal,
		OpenStdin:  cfg.Stdin,
		StdinOnce:  cfg.Stdin && cfg.StdinOnce,
		Tty:        cfg.TTY,
	}
	if !joins {
		cc.Hostname = cfg.Hostname
	}
	// nil keeps the image's entrypoint and cmd; an empty non-nil slice would clear them.
	if len(cfg.Command) > 0 {
		cc.Entrypoint = strslice.StrSlice(cfg.Command)
	}
	if len(cfg.Args) > 0 {
		cc.Cmd = strslice.StrSlice(cfg.Args)
	}
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(cfg.NetworkMode),
		IpcMode:     container.IpcMode(cfg.IpcMode),
		PidMode:     container.PidMode(cfg.PidMode),
		Resources: container.Resources{
			CPUQuota:  cfg.CPUQuota,
			CPUPeriod: cfg.CPUPeriod,
			CPUShares: cfg.CPUShares,
			Memory:    cfg.MemoryLimit,
		},
	}
	if cfg.MemoryLimit > 0 {
		// Kubernetes runs without swap: the limit is the limit, not half of it.
		hc.MemorySwap = cfg.MemoryLimit
	}
	if cfg.UTSMode == "host" {
		hc.UTSMode = container.UTSMode(cfg.UTSMode)
	}
	for _, m := range cfg.Mounts {
		bind := m.HostPath + ":" + m.ContainerPath
		if m.ReadOnly {
			bind += ":ro"
		}
		hc.Binds = append(hc.Binds, bind)
	}
	resp, err := r.cli.ContainerCreate(ctx, cc, hc, nil, nil, cfg.Name)
	if err != nil {
		switch {
		case errdefs.IsConflict(err):
			err = fmt.Errorf("%w: %w", runtime.ErrNameInUse, err)
		case errdefs.IsNotFound(err) && strings.Contains(strings.ToLower(err.Error()), "image"):
			err = fmt.Errorf("%w: %w", runtime.ErrImageNotFound, err)
		default:
			err = mapErr(err)
		}
		return "", fmt.Errorf("create container: %w", err)
	}
	return resp.ID, nil
}

// Start implements runtime.Runtime. Its error, like Create's, names no container: it is the
// message users see in the pod's status and events, where the same failure of every attempt
// makes one event with a count.
func (r *Runtime) Start(ctx context.Context, id string) error {
	if err := r.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", mapErr(err))
	}
	return nil
}

// Stop implements runtime.Runtime. Docker counts the grace in whole seconds, so it is rounded
// up: a container never gets less time than asked.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	secs := int((grace + time.Second - 1) / time.Second)
	if err := r.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &secs}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, mapErr(err))
	}
	return nil
}

// Remove implements runtime.Runtime, also removing the container's anonymous volumes.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	err := r.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil {
		return fmt.Errorf("remove container %s: %w", id, mapErr(err))
	}
	return nil
}

// ImagePresent implements runtime.Runtime.
func (r *Runtime) ImagePresent(ctx context.Context, ref string) (bool, error) {
	if _, _, err := r.cli.ImageInspectWithRaw(ctx, ref); err != nil {
		if errdefs.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return true, nil
}

// ImageID implements runtime.Runtime.
func (r *Runtime) ImageID(ctx context.Context, ref string) (string, error) {
	img, _, err := r.cli.ImageInspectWithRaw(ctx, ref)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return img.ID, nil
}

// LoadImage implements runtime.Runtime. The daemon answers 200 and reports a bad archive in
// the message stream, which is read to its end.
func (r *Runtime) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	resp, err := r.cli.ImageLoad(ctx, archive, true)
	if err != nil {
		if errdefs.IsInvalidParameter(err) {
			return nil, fmt.Errorf("load image: %w: %v", runtime.ErrInvalidImage, err)
		}
		return nil, fmt.Errorf("load image: %w", err)
	}
	defer resp.Body.Close()
	var loaded []string
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return loaded, nil
			}
			return loaded, fmt.Errorf("load image: read answer: %w", err)
		}
		if msg.Error != "" {
			return loaded, fmt.Errorf("load image: %w: %s", runtime.ErrInvalidImage, msg.Error)
		}
		for _, line := range strings.Split(msg.Stream, "\n") {
			if ref, ok := strings.CutPrefix(strings.TrimSpace(line), "Loaded image: "); ok {
				loaded = append(loaded, ref)
			}
		}
	}
}

// Pull implements runtime.Runtime. The daemon reports some failures in the HTTP status and
// others inside the progress stream, so both are classified.
func (r *Runtime) Pull(ctx context.Context, ref string) error {
	rc, err := r.cli.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return fmt.Errorf("pull %s: %w", ref, pullErr(err, err.Error()))
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("pull %s: read progress: %w", ref, err)
		}
		if msg.Error != "" {
			return fmt.Errorf("pull %s: %w", ref, pullErr(errors.New(msg.Error), msg.Error))
		}
	}
}

// pullErr tells "no registry answered" from "the registry has no such image" by the daemon's
// message, the only place Docker says which it was.
func pullErr(err error, msg string) error {
	m := strings.ToLower(msg)
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "i/o timeout",
		"tls handshake timeout", "client.timeout", "network is unreachable", "server misbehaving",
		"temporary failure in name resolution", "connection reset"} {
		if strings.Contains(m, s) {
			return fmt.Errorf("%w: %w", runtime.ErrRegistryUnavailable, err)
		}
	}
	if errdefs.IsUnavailable(err) {
		return fmt.Errorf("%w: %w", runtime.ErrRegistryUnavailable, err)
	}
	for _, s := range []string{"manifest unknown", "not found", "repository does not exist", "pull access denied"} {
		if strings.Contains(m, s) {
			return fmt.Errorf("%w: %w", runtime.ErrImageNotFound, err)
		}
	}
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %w", runtime.ErrImageNotFound, err)
	}
	return err
}

// NetNS implements runtime.Runtime.
func (r *Runtime) NetNS(ctx context.Context, id string) (string, error) {
	c, err := r.Inspect(ctx, id)
	if err != nil {
		return "", err
	}
	if c.State != runtime.StateRunning || c.Pid == 0 {
		return "", fmt.Errorf("netns of %s: %w", id, runtime.ErrNotRunning)
	}
	return fmt.Sprintf("/proc/%d/ns/net", c.Pid), nil
}

// mapErr turns Docker's error classes into the runtime's sentinels, keeping Docker's message.
func mapErr(err error) error {
	switch {
	case errdefs.IsNotFound(err):
		return fmt.Errorf("%w: %w", runtime.ErrNotFound, err)
	case errdefs.IsConflict(err) && strings.Contains(err.Error(), "not running"):
		return fmt.Errorf("%w: %w", runtime.ErrNotRunning, err)
	default:
		return err
	}
}
