package audit

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"gopkg.in/natefinch/lumberjack.v2"
)

// LogOptions say where events go and how the file rotates, as kube-apiserver's
// --audit-log-* flags.
type LogOptions struct {
	// Path is the file, or "-" for standard output.
	Path string
	// MaxSizeMB rotates the file once it reaches this size; MaxBackups and MaxAgeDays bound
	// the rotated files kept (0: all).
	MaxSizeMB  int
	MaxBackups int
	MaxAgeDays int
}

// queueSize bounds the events waiting to be written: past it, events are dropped and counted
// rather than making requests wait on the disk.
const queueSize = 10000

// Log writes events as JSON lines from one goroutine. Build it with NewLog; Close flushes.
type Log struct {
	w       io.WriteCloser
	queue   chan *Event
	done    chan struct{}
	once    sync.Once
	dropped atomic.Int64
	log     *slog.Logger
}

// NewLog opens the backend; it starts the goroutine that writes.
func NewLog(opts LogOptions, log *slog.Logger) *Log {
	var w io.WriteCloser
	if opts.Path == "-" {
		w = nopCloser{os.Stdout}
	} else {
		w = &lumberjack.Logger{Filename: opts.Path, MaxSize: opts.MaxSizeMB, MaxBackups: opts.MaxBackups, MaxAge: opts.MaxAgeDays}
	}
	l := &Log{w: w, queue: make(chan *Event, queueSize), done: make(chan struct{}), log: log}
	go l.run()
	return l
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Write queues an event; it never blocks.
func (l *Log) Write(ev *Event) {
	select {
	case l.queue <- ev:
	default:
		l.dropped.Add(1)
	}
}

// Dropped counts the events lost because the queue was full.
func (l *Log) Dropped() int64 { return l.dropped.Load() }

func (l *Log) run() {
	defer close(l.done)
	enc := json.NewEncoder(l.w)
	for ev := range l.queue {
		if err := enc.Encode(ev); err != nil {
			l.log.Warn("writing an audit event", "err", err)
		}
	}
}

// Close writes what is queued and closes the file.
func (l *Log) Close() error {
	l.once.Do(func() { close(l.queue) })
	<-l.done
	return l.w.Close()
}
