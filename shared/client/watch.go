package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// streamWatcher decodes a stream of newline-delimited metav1.WatchEvent JSON.
type streamWatcher struct {
	body   io.ReadCloser
	decode func([]byte) (runtime.Object, error)
	result chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

// newStreamWatcher starts reading body; the reader ends with the stream, on Stop, or when ctx
// ends (the request was made with ctx, so its body stops too).
func newStreamWatcher(ctx context.Context, body io.ReadCloser, decode func([]byte) (runtime.Object, error)) *streamWatcher {
	w := &streamWatcher{body: body, decode: decode, result: make(chan watch.Event), stop: make(chan struct{})}
	go w.run(ctx)
	return w
}

// ResultChan is closed when the watch ends for any reason.
func (w *streamWatcher) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch; it is safe to call more than once and from any goroutine.
func (w *streamWatcher) Stop() {
	w.once.Do(func() {
		close(w.stop)
		w.body.Close()
	})
}

func (w *streamWatcher) stopped(ctx context.Context) bool {
	select {
	case <-w.stop:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

func (w *streamWatcher) run(ctx context.Context) {
	defer close(w.result)
	defer w.body.Close()
	dec := json.NewDecoder(w.body)
	for {
		var ev metav1.WatchEvent
		if err := dec.Decode(&ev); err != nil {
			if w.stopped(ctx) || endOfStream(err) {
				return
			}
			w.send(ctx, errorEvent(fmt.Sprintf("unable to decode an event from the watch stream: %v", err)))
			return
		}
		event, err := w.event(ev)
		if err != nil {
			w.send(ctx, errorEvent(err.Error()))
			return
		}
		if !w.send(ctx, event) {
			return
		}
	}
}

func (w *streamWatcher) send(ctx context.Context, ev watch.Event) bool {
	select {
	case w.result <- ev:
		return true
	case <-w.stop:
		return false
	case <-ctx.Done():
		return false
	}
}

func (w *streamWatcher) event(ev metav1.WatchEvent) (watch.Event, error) {
	typ := watch.EventType(ev.Type)
	switch typ {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		obj, err := w.decode(ev.Object.Raw)
		if err != nil {
			return watch.Event{}, fmt.Errorf("decode %s watch event: %w", typ, err)
		}
		return watch.Event{Type: typ, Object: obj}, nil
	case watch.Error:
		st := &metav1.Status{}
		if err := json.Unmarshal(ev.Object.Raw, st); err != nil {
			return watch.Event{}, fmt.Errorf("decode ERROR watch event: %w", err)
		}
		return watch.Event{Type: watch.Error, Object: st}, nil
	}
	return watch.Event{}, fmt.Errorf("unknown watch event type %q", ev.Type)
}

// endOfStream is a normal end: the server closed the watch or the connection went away. The
// consumer sees the channel close and rewatches or relists.
func endOfStream(err error) bool {
	var netErr net.Error
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, http.ErrBodyReadAfterClose) || errors.Is(err, context.Canceled) || errors.As(err, &netErr)
}

func errorEvent(msg string) watch.Event {
	return watch.Event{Type: watch.Error, Object: &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     http.StatusInternalServerError,
		Reason:   metav1.StatusReasonInternalError,
		Message:  msg,
	}}
}
