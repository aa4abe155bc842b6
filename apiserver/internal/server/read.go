package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

func notFound(t target) error {
	return apierror.NotFound(t.res.GVK.Group, t.res.Plural, t.name)
}

// storeErr turns a storage failure into an API error; unknown failures stay 5xx.
func storeErr(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return apierror.New(apierror.ErrTimeout, "storage did not answer in time: %v", err)
	case errors.Is(err, storage.ErrCompacted):
		return apierror.New(apierror.ErrGone, "the requested resource version is too old and has been compacted: %v", err)
	default:
		return apierror.New(apierror.ErrUnavailable, "storage error: %v", err)
	}
}

// read returns the current object of a target and its stored form.
func (s *Server) read(ctx context.Context, t target) (runtime.Object, storage.KV, error) {
	kv, err := s.store.Get(ctx, storageKey(t.res, t.namespace, t.name))
	if errors.Is(err, storage.ErrKeyNotFound) {
		return nil, kv, notFound(t)
	}
	if err != nil {
		return nil, kv, storeErr(err)
	}
	obj, err := decodeStored(t.res, kv.Value, kv.ModRevision)
	return obj, kv, err
}

// respond writes an object or list, as a Table when the client asked for one.
func (s *Server) respond(c *gin.Context, code int, obj runtime.Object) {
	if tableRequest(c) && s.cfg.Tables != nil {
		tbl, err := s.cfg.Tables.Convert(obj, c.DefaultQuery("includeObject", string(metav1.IncludeMetadata)), s.cfg.Now())
		if err != nil {
			writeError(c, fmt.Errorf("render table: %w", err))
			return
		}
		tbl.APIVersion, tbl.Kind = "meta.k8s.io/v1", "Table"
		writeJSON(c, code, tbl)
		return
	}
	writeJSON(c, code, obj)
}

func (s *Server) get(c *gin.Context, t target) {
	kv, err := s.store.Get(c.Request.Context(), storageKey(t.res, t.namespace, t.name))
	if errors.Is(err, storage.ErrKeyNotFound) {
		writeError(c, notFound(t))
		return
	}
	if err != nil {
		writeError(c, storeErr(err))
		return
	}
	s.respondStored(c, http.StatusOK, t.res, nil, kv.Value, kv.ModRevision)
}

// selectors are the label and field selectors of a list or watch.
type selectors struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelectors(c *gin.Context, t target) (selectors, error) {
	ls, err := labels.Parse(c.Query("labelSelector"))
	if err != nil {
		return selectors{}, apierror.New(apierror.ErrBadRequest, "unable to parse labelSelector: %v", err)
	}
	fs, err := fields.ParseSelector(c.Query("fieldSelector"))
	if err != nil {
		return selectors{}, apierror.New(apierror.ErrBadRequest, "unable to parse fieldSelector: %v", err)
	}
	if err := checkFieldSelector(t.res, fs); err != nil {
		return selectors{}, apierror.New(apierror.ErrBadRequest, "%v", err)
	}
	return selectors{labels: ls, fields: fs}, nil
}

func (sel selectors) matches(obj runtime.Object) bool {
	if !sel.labels.Empty() {
		m, err := meta.Accessor(obj)
		if err != nil || !sel.labels.Matches(labels.Set(m.GetLabels())) {
			return false
		}
	}
	return sel.fields.Empty() || sel.fields.Matches(fieldSet(obj))
}

// continueToken is the opaque list continuation: the revision to keep reading at and the next key.
type continueToken struct {
	Revision int64  `json:"rv"`
	Start    string `json:"start"`
}

func encodeContinue(rev int64, start string) string {
	b, _ := json.Marshal(continueToken{Revision: rev, Start: start})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string, prefix string) (continueToken, error) {
	var tok continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &tok)
	}
	if err != nil || tok.Revision <= 0 || len(tok.Start) < len(prefix) || tok.Start[:len(prefix)] != prefix {
		return tok, apierror.New(apierror.ErrBadRequest, "continue key is not valid")
	}
	return tok, nil
}

// listObjects reads a collection at one revision, filtered, at most limit items (0: all).
func (s *Server) listObjects(ctx context.Context, t target, sel selectors, limit int64, cont string, rev int64) ([]runtime.Object, int64, string, error) {
	prefix := storagePrefix(t.res, t.namespace)
	from := prefix
	if cont != "" {
		tok, err := decodeContinue(cont, prefix)
		if err != nil {
			return nil, 0, "", err
		}
		from, rev = tok.Start, tok.Revision
	}
	chunk := int64(500)
	if limit > 0 && limit < chunk {
		chunk = limit
	}
	var items []runtime.Object
	for {
		page, err := s.store.List(ctx, prefix, from, chunk, rev)
		if errors.Is(err, storage.ErrCompacted) && cont != "" {
			return nil, 0, "", apierror.New(apierror.ErrGone, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
		}
		if err != nil {
			return nil, 0, "", storeErr(err)
		}
		rev = page.Revision
		for i, kv := range page.KVs {
			obj, err := decodeStored(t.res, kv.Value, kv.ModRevision)
			if err != nil {
				return nil, 0, "", err
			}
			if !sel.matches(obj) {
				continue
			}
			items = append(items, obj)
			if limit > 0 && int64(len(items)) == limit {
				more := page.More || i < len(page.KVs)-1
				if more {
					return items, rev, encodeContinue(rev, kv.Key+"\x00"), nil
				}
				return items, rev, "", nil
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return items, rev, "", nil
		}
		from = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

func (s *Server) list(c *gin.Context, t target) {
	sel, err := parseSelectors(c, t)
	if err != nil {
		writeError(c, err)
		return
	}
	var limit int64
	if l := c.Query("limit"); l != "" {
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			writeError(c, apierror.New(apierror.ErrBadRequest, "limit must be a non-negative integer, not %q", l))
			return
		}
	}
	items, rev, cont, err := s.listObjects(c.Request.Context(), t, sel, limit, c.Query("continue"), 0)
	if err != nil {
		writeError(c, err)
		return
	}
	list := t.res.NewList()
	if err := meta.SetList(list, items); err != nil {
		writeError(c, fmt.Errorf("build list: %w", err))
		return
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		writeError(c, err)
		return
	}
	lm.SetResourceVersion(strconv.FormatInt(rev, 10))
	lm.SetContinue(cont)
	list.GetObjectKind().SetGroupVersionKind(t.res.GVK.GroupVersion().WithKind(t.res.GVK.Kind + "List"))
	s.respond(c, http.StatusOK, list)
}

// matchAll selects every object.
var matchAll = selectors{labels: labels.Everything(), fields: fields.Everything()}
