package dockerruntime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"minik8s.io/kubelet/internal/runtime"
)

// ExecOutputLimit caps the output Exec keeps; probes and `kubectl exec`-style checks need the
// start of the output, and a runaway command must not grow the kubelet.
const ExecOutputLimit = 64 << 10

// Logs implements runtime.Runtime. Docker multiplexes stdout and stderr into frames, except for
// a container with a TTY, whose one output comes as it is; the returned reader carries the
// payloads in the order Docker sent them, as plain text.
func (r *Runtime) Logs(ctx context.Context, id string, opts runtime.LogOptions) (io.ReadCloser, error) {
	j, err := r.cli.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", id, mapErr(err))
	}
	tty := j.Config != nil && j.Config.Tty
	lo := container.LogsOptions{
		ShowStdout: true,
		ShowStderr: true,
		Follow:     opts.Follow,
		Timestamps: opts.Timestamps,
		Tail:       "all",
	}
	if opts.Tail >= 0 {
		lo.Tail = strconv.FormatInt(opts.Tail, 10)
	}
	if !opts.Since.IsZero() {
		lo.Since = fmt.Sprintf("%d.%09d", opts.Since.Unix(), opts.Since.Nanosecond())
	}
	rc, err := r.cli.ContainerLogs(ctx, id, lo)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", id, mapErr(err))
	}
	if tty {
		return rc, nil
	}
	pr, pw := io.Pipe()
	go func() {
		// The same writer for both streams keeps Docker's interleaving.
		_, err := stdcopy.StdCopy(pw, pw, rc)
		rc.Close()
		pw.CloseWithError(err)
	}()
	return &demuxed{PipeReader: pr, src: rc}, nil
}

// demuxed closes Docker's stream too, which ends the copying goroutine and a follow.
type demuxed struct {
	*io.PipeReader
	src io.Closer
}

func (d *demuxed) Close() error {
	d.src.Close()
	return d.PipeReader.Close()
}

// Stats implements runtime.Runtime with one sample, without Docker's second wait for a
// CPU delta: the kubelet computes rates from cumulative usage itself.
func (r *Runtime) Stats(ctx context.Context, id string) (runtime.Stats, error) {
	resp, err := r.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return runtime.Stats{}, fmt.Errorf("stats of %s: %w", id, mapErr(err))
	}
	defer resp.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return runtime.Stats{}, fmt.Errorf("stats of %s: decode: %w", id, err)
	}
	return runtime.Stats{
		Timestamp:             s.Read,
		CPUUsageNanos:         s.CPUStats.CPUUsage.TotalUsage,
		MemoryWorkingSetBytes: workingSet(s.MemoryStats),
	}, nil
}

// workingSet is usage minus inactive page cache, which the kernel can drop under pressure;
// it is what the OOM killer and the kubelet's eviction look at.
func workingSet(m container.MemoryStats) uint64 {
	inactive, ok := m.Stats["inactive_file"] // cgroup v2
	if !ok {
		inactive = m.Stats["total_inactive_file"] // cgroup v1
	}
	if inactive >= m.Usage {
		return 0
	}
	return m.Usage - inactive
}

// Exec implements runtime.Runtime: it runs cmd attached, keeps the first ExecOutputLimit bytes
// of stdout and stderr interleaved, and reads the exit code once the process has ended.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string) (runtime.ExecResult, error) {
	created, err := r.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd:          cmd,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec in %s: %w", id, mapErr(err))
	}
	att, err := r.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec in %s: attach: %w", id, mapErr(err))
	}
	// The hijacked connection ignores ctx on its own.
	stop := context.AfterFunc(ctx, att.Close)
	defer stop()
	out := &capped{limit: ExecOutputLimit}
	_, copyErr := stdcopy.StdCopy(out, out, att.Reader)
	att.Close()
	if err := ctx.Err(); err != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec in %s: %w", id, err)
	}
	if copyErr != nil {
		return runtime.ExecResult{}, fmt.Errorf("exec in %s: read output: %w", id, copyErr)
	}
	code, err := r.execExitCode(ctx, id, created.ID)
	if err != nil {
		return runtime.ExecResult{}, err
	}
	return runtime.ExecResult{ExitCode: code, Output: out.Bytes()}, nil
}

// execExitCode waits for the daemon to record the exit code of an exec whose output has
// ended: the stream can end a moment before it does.
func (r *Runtime) execExitCode(ctx context.Context, id, execID string) (int, error) {
	for {
		insp, err := r.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return 0, fmt.Errorf("exec in %s: inspect: %w", id, mapErr(err))
		}
		if !insp.Running {
			return insp.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("exec in %s: %w", id, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// capped keeps the first limit bytes and drops the rest while still draining the source.
type capped struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}
