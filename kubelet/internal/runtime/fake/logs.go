package fake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"minik8s.io/kubelet/internal/runtime"
)

// TimestampFormat is how Logs stamps lines, the fixed-width RFC 3339 form Docker uses.
const TimestampFormat = "2006-01-02T15:04:05.000000000Z07:00"

type logEntry struct {
	at     time.Time
	stream string
	line   []byte // ends with "\n"
}

// writeLocked splits data into lines; an unterminated tail waits for the rest of its line, as
// Docker's log copier does.
func (r *Runtime) writeLocked(ct *container, stream string, data []byte) {
	buf := append(ct.partial[stream], data...)
	grew := false
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		ct.logs = append(ct.logs, logEntry{at: r.clock.Now(), stream: stream, line: bytes.Clone(buf[:i+1])})
		buf = buf[i+1:]
		grew = true
	}
	ct.partial[stream] = bytes.Clone(buf)
	if grew {
		r.notifyLocked(ct)
	}
}

// streamWriter is a Program's stdout or stderr.
type streamWriter struct {
	r      *Runtime
	ct     *container
	stream string
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	w.r.writeLocked(w.ct, w.stream, p)
	attached := slices.Clone(w.ct.attached)
	w.r.mu.Unlock()
	// Outside the lock: a slow client holds up the process, as a full pipe would, not the
	// runtime.
	for _, a := range attached {
		a.write(w.stream, p)
	}
	return len(p), nil
}

func format(dst *bytes.Buffer, entries []logEntry, timestamps bool) {
	for _, e := range entries {
		if timestamps {
			dst.WriteString(e.at.UTC().Format(TimestampFormat))
			dst.WriteByte(' ')
		}
		dst.Write(e.line)
	}
}

// Logs implements runtime.Runtime. A follow ends when the container stops, ctx is done or the
// reader is closed.
func (r *Runtime) Logs(ctx context.Context, id string, opts runtime.LogOptions) (io.ReadCloser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.recordLocked("Logs", id, nil); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ct, err := r.getLocked(id)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	var selected []logEntry
	for _, e := range ct.logs {
		if opts.Since.IsZero() || !e.at.Before(opts.Since) {
			selected = append(selected, e)
		}
	}
	if opts.Tail >= 0 && int64(len(selected)) > opts.Tail {
		selected = selected[int64(len(selected))-opts.Tail:]
	}
	var first bytes.Buffer
	format(&first, selected, opts.Timestamps)
	if !opts.Follow || ct.c.State != runtime.StateRunning {
		return io.NopCloser(&first), nil
	}
	pr, pw := io.Pipe()
	f := &follower{PipeReader: pr, done: make(chan struct{})}
	go r.follow(ctx, ct, pw, f.done, first.Bytes(), len(ct.logs), opts.Timestamps)
	return f, nil
}

type follower struct {
	*io.PipeReader
	once sync.Once
	done chan struct{}
}

func (f *follower) Close() error {
	f.once.Do(func() { close(f.done) })
	return f.PipeReader.Close()
}

func (r *Runtime) follow(ctx context.Context, ct *container, pw *io.PipeWriter, done <-chan struct{}, first []byte, next int, timestamps bool) {
	if _, err := pw.Write(first); err != nil {
		return
	}
	for {
		r.mu.Lock()
		var buf bytes.Buffer
		format(&buf, ct.logs[next:], timestamps)
		next = len(ct.logs)
		running := ct.c.State == runtime.StateRunning
		changed := ct.changed
		r.mu.Unlock()
		if buf.Len() > 0 {
			if _, err := pw.Write(buf.Bytes()); err != nil {
				return
			}
		}
		if !running {
			pw.Close()
			return
		}
		select {
		case <-changed:
		case <-done:
			return
		case <-ctx.Done():
			pw.CloseWithError(ctx.Err())
			return
		}
	}
}
