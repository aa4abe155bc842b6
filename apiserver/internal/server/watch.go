package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// protobufRawCodec writes protobuf without the envelope, for watch frames.
var protobufRawCodec = protobuf.NewRawSerializer(scheme.Scheme, scheme.Scheme)

// initialEventsEnd marks the bookmark that ends the initial events of a watch-list.
const initialEventsEnd = metav1.InitialEventsAnnotationKey

// watchEvent is one line of a JSON watch stream.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watchStream writes watch events in the negotiated form: newline-delimited JSON, or
// length-prefixed protobuf frames of metav1.WatchEvent. Each event is flushed.
type watchStream struct {
	c   *gin.Context
	s   *Server
	res *scheme.Resource
	out output
}

func (w *watchStream) send(typ watch.EventType, obj runtime.Object) error {
	view := w.out
	if typ == watch.Error || (typ == watch.Bookmark && view.view == viewTable) {
		// Errors carry a Status; a Table watch's bookmarks carry the object itself.
		view.view = viewObject
	}
	data, err := w.s.encode(view, obj)
	if err != nil {
		return err
	}
	if w.out.mediaType == protobufMediaType {
		// The frame is the WatchEvent's bare protobuf (no envelope); the object inside it
		// carries the envelope, as kube-apiserver writes them.
		ev := &metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: data}}
		var buf bytes.Buffer
		if err := protobufRawCodec.Encode(ev, &buf); err != nil {
			return err
		}
		frame := buf.Bytes()
		var size [4]byte
		binary.BigEndian.PutUint32(size[:], uint32(len(frame)))
		if _, err := w.c.Writer.Write(size[:]); err != nil {
			return err
		}
		data = frame
	} else {
		if data, err = json.Marshal(watchEvent{Type: typ, Object: data}); err != nil {
			return err
		}
		data = append(data, '\n')
	}
	if _, err := w.c.Writer.Write(data); err != nil {
		return err
	}
	w.c.Writer.Flush()
	return nil
}

// bookmark sends a BOOKMARK at rev: an empty object of the kind carrying only its
// resourceVersion (and the initial-events-end annotation after a watch-list's initial events).
func (w *watchStream) bookmark(rev int64, initialEnd bool) error {
	bm := w.res.New()
	bm.GetObjectKind().SetGroupVersionKind(w.res.GVK)
	if m, err := meta.Accessor(bm); err == nil {
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		if initialEnd {
			m.SetAnnotations(map[string]string{initialEventsEnd: "true"})
		}
	}
	return w.send(watch.Bookmark, bm)
}

// parseRV reads a resourceVersion parameter; "" and "0" are 0.
func parseRV(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierror.New(apierror.ErrBadRequest, "resourceVersion must be an integer, not %q", rv)
	}
	return n, nil
}

// tooLargeRV is Kubernetes' answer to a resourceVersion newer than the store has: clients
// recognise it by its cause and retry.
func tooLargeRV(requested, current int64) error {
	e := apierror.New(apierror.ErrTimeout, "Too large resource version: %d, current: %d", requested, current)
	e.Status.Details = &metav1.StatusDetails{RetryAfterSeconds: 1, Causes: []metav1.StatusCause{
		{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}}
	return e
}

// notOlderThan checks that the store has reached revision rev.
func (s *Server) notOlderThan(ctx context.Context, rev int64) error {
	if rev == 0 {
		return nil
	}
	cur, err := s.reg.Revision(ctx)
	if err != nil {
		return err
	}
	if rev > cur {
		return tooLargeRV(rev, cur)
	}
	return nil
}

// listRevision is the revision a list reads at (0: the latest). Kubernetes' rules: no
// resourceVersion or "0" reads the latest; resourceVersionMatch=Exact, or a resourceVersion
// with a limit and no match rule, reads exactly there (410 once compacted); otherwise the
// latest, which must not be older than the resourceVersion given.
func (s *Server) listRevision(ctx context.Context, opts *internalversion.ListOptions) (int64, error) {
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return 0, apierror.New(apierror.ErrBadRequest, "specifying resource version is not allowed when using continue")
		}
		return 0, nil
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil || rv == 0 {
		return 0, err
	}
	if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact || (opts.ResourceVersionMatch == "" && opts.Limit > 0) {
		return rv, s.notOlderThan(ctx, rv)
	}
	return 0, s.notOlderThan(ctx, rv)
}

// watch streams changes. Where it starts, as in Kubernetes:
//   - sendInitialEvents=true (a watch-list): the current objects as ADDED, from a list not
//     older than resourceVersion, then a BOOKMARK annotated k8s.io/initial-events-end at the
//     list's revision, then the changes after it;
//   - sendInitialEvents=false: the changes after resourceVersion, or after now without one;
//   - neither: with resourceVersion the changes after it; without (or "0") the current
//     objects as ADDED first.
func (s *Server) watch(c *gin.Context, t target, opts *internalversion.ListOptions) {
	sel, err := s.selectors(t, opts)
	if err != nil {
		writeError(c, err)
		return
	}
	out, ok := s.negotiate(c, t.res, answerWatch)
	if !ok {
		return
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		writeError(c, err)
		return
	}
	// No timeout (or one that is not positive) gets the server's: 30 to 60 minutes, spread so
	// that clients do not all come back at once.
	timeout := time.Duration(30+rand.IntN(30)) * time.Minute
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
	defer cancel()
	defer context.AfterFunc(s.watching, cancel)()

	var initial []runtime.Object
	listed := false
	startRev := rv
	switch send := opts.SendInitialEvents; {
	case send != nil && !*send:
		if startRev == 0 {
			if startRev, err = s.reg.Revision(ctx); err != nil {
				writeError(c, err)
				return
			}
		}
	case send != nil || rv == 0:
		if err := s.notOlderThan(ctx, rv); err != nil {
			writeError(c, err)
			return
		}
		list, err := s.reg.List(ctx, t.key(), registry.ListOptions{Selectors: sel})
		if err != nil {
			writeError(c, err)
			return
		}
		initial, startRev, listed = list.Items, list.Revision, true
	}
	events := s.reg.Watch(ctx, t.key(), sel, startRev)

	contentType := out.mediaType
	if contentType == protobufMediaType {
		contentType += ";stream=watch"
	}
	c.Header("Content-Type", contentType)
	c.Header("Cache-Control", "no-cache")
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	c.Writer.Flush()
	w := &watchStream{c: c, s: s, res: t.res, out: out}
	for _, obj := range initial {
		if w.send(watch.Added, obj) != nil {
			return
		}
	}
	if listed && opts.SendInitialEvents != nil && opts.AllowWatchBookmarks && w.bookmark(startRev, true) != nil {
		return
	}
	var bookmarks <-chan time.Time
	if opts.AllowWatchBookmarks {
		tk := time.NewTicker(s.cfg.WatchBookmarkInterval)
		defer tk.Stop()
		bookmarks = tk.C
	}
	lastRev := startRev
	for {
		select {
		case <-ctx.Done():
			return
		case <-bookmarks:
			if w.bookmark(lastRev, false) != nil {
				return
			}
		case b, ok := <-events:
			if !ok {
				return
			}
			for _, ev := range b.Events {
				lastRev = ev.Revision
				if ev.Type == "" {
					continue
				}
				if w.send(ev.Type, ev.Object) != nil {
					return
				}
			}
			if b.Err != nil {
				st := apierror.ToStatus(b.Err)
				st.Kind, st.APIVersion = "Status", "v1"
				_ = w.send(watch.Error, st)
				return
			}
		}
	}
}
