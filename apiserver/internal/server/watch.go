package server

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// watchEvent is one line of a watch stream.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watchStream writes newline-delimited watch events, flushing each one.
type watchStream struct {
	c     *gin.Context
	s     *Server
	table bool
	inc   string
	enc   *json.Encoder
}

func (w *watchStream) send(typ watch.EventType, obj runtime.Object) error {
	var payload any = obj
	if w.table && typ != watch.Bookmark && typ != watch.Error {
		tbl, err := w.s.cfg.Tables.Convert(obj, w.inc, w.s.cfg.Now())
		if err != nil {
			return err
		}
		tbl.APIVersion, tbl.Kind = "meta.k8s.io/v1", "Table"
		payload = tbl
	}
	if err := w.enc.Encode(watchEvent{Type: typ, Object: payload}); err != nil {
		return err
	}
	w.c.Writer.Flush()
	return nil
}

func (s *Server) watch(c *gin.Context, t target) {
	sel, err := parseSelectors(c, t)
	if err != nil {
		writeError(c, err)
		return
	}
	rvParam := c.Query("resourceVersion")
	var startRev int64
	if rvParam != "" && rvParam != "0" {
		if startRev, err = strconv.ParseInt(rvParam, 10, 64); err != nil || startRev < 0 {
			writeError(c, apierror.New(apierror.ErrBadRequest, "resourceVersion must be an integer, not %q", rvParam))
			return
		}
	}
	timeout := time.Duration(30+rand.IntN(30)) * time.Minute
	if ts := c.Query("timeoutSeconds"); ts != "" {
		v, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || v < 0 {
			writeError(c, apierror.New(apierror.ErrBadRequest, "timeoutSeconds must be a non-negative integer, not %q", ts))
			return
		}
		timeout = time.Duration(v) * time.Second
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), timeout)
	defer cancel()

	// Without a resourceVersion the watch starts with the current state, as Kubernetes does.
	var initial []runtime.Object
	if startRev == 0 {
		items, rev, _, err := s.listObjects(ctx, t, sel, 0, "", 0)
		if err != nil {
			writeError(c, err)
			return
		}
		initial, startRev = items, rev
	}
	events := s.store.Watch(ctx, storagePrefix(t.res, t.namespace), startRev)

	c.Header("Content-Type", "application/json")
	c.Header("Cache-Control", "no-cache")
	c.Status(http.StatusOK)
	c.Writer.WriteHeaderNow()
	c.Writer.Flush()
	w := &watchStream{c: c, s: s, table: tableRequest(c) && s.cfg.Tables != nil,
		inc: c.DefaultQuery("includeObject", string(metav1.IncludeMetadata)), enc: json.NewEncoder(c.Writer)}
	for _, obj := range initial {
		if w.send(watch.Added, obj) != nil {
			return
		}
	}
	var bookmarks <-chan time.Time
	if c.Query("allowWatchBookmarks") == "true" {
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
			bm := t.res.New()
			bm.GetObjectKind().SetGroupVersionKind(t.res.GVK)
			if m, err := meta.Accessor(bm); err == nil {
				m.SetResourceVersion(strconv.FormatInt(lastRev, 10))
			}
			if w.send(watch.Bookmark, bm) != nil {
				return
			}
		case res, ok := <-events:
			if !ok {
				return
			}
			if res.Err != nil {
				s.watchError(w, res.Err, startRev)
				return
			}
			for _, ev := range res.Events {
				typ, obj, err := s.translate(t, sel, ev)
				if err != nil {
					s.log.Warn("watch: undecodable object", "key", ev.KV.Key, "err", err)
					continue
				}
				lastRev = ev.Revision
				if typ == "" {
					continue
				}
				if w.send(typ, obj) != nil {
					return
				}
			}
		}
	}
}

func (s *Server) watchError(w *watchStream, err error, rev int64) {
	var st *metav1.Status
	if errors.Is(err, storage.ErrCompacted) {
		st = &apierror.New(apierror.ErrGone, "too old resource version: %d", rev).Status
	} else {
		st = apierror.ToStatus(storeErr(err))
	}
	_ = w.enc.Encode(watchEvent{Type: watch.Error, Object: st})
	w.c.Writer.Flush()
}

// translate turns a storage change into the watch event a selector-filtered watcher sees:
// an object that starts matching is ADDED, one that stops matching is DELETED.
func (s *Server) translate(t target, sel selectors, ev storage.Event) (watch.EventType, runtime.Object, error) {
	obj, err := decodeStored(t.res, ev.KV.Value, ev.Revision)
	if err != nil {
		return "", nil, err
	}
	if ev.Type == storage.Delete {
		if sel.matches(obj) {
			return watch.Deleted, obj, nil
		}
		return "", nil, nil
	}
	cur := sel.matches(obj)
	prev := false
	if ev.PrevKV != nil && !ev.Created {
		if p, err := decodeStored(t.res, ev.PrevKV.Value, ev.PrevKV.ModRevision); err == nil {
			prev = sel.matches(p)
		}
	}
	switch {
	case cur && prev:
		return watch.Modified, obj, nil
	case cur:
		return watch.Added, obj, nil
	case prev:
		return watch.Deleted, obj, nil
	}
	return "", nil, nil
}
