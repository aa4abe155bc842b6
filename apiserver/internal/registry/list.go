package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// Selectors are the label and field selectors of a list or watch; nil selects everything.
type Selectors struct {
	Labels labels.Selector
	Fields fields.Selector
}

// ListOptions say what a list returns.
type ListOptions struct {
	Selectors
	// Limit is the most items returned (0: all); Continue resumes a paged list.
	Limit    int64
	Continue string
	// Revision reads at a past revision (0: the latest).
	Revision int64
}

// ListResult is one page of a list.
type ListResult struct {
	Items []runtime.Object
	// Revision is what the list was read at: its resourceVersion.
	Revision int64
	// Continue resumes the list after Items; empty on the last page.
	Continue string
}

// CheckSelectors rejects field selectors on fields the resource does not index.
func (r *Registry) CheckSelectors(res *scheme.Resource, sel Selectors) error {
	if sel.Fields == nil {
		return nil
	}
	if err := checkFieldSelector(r.strategy(res), res, sel.Fields); err != nil {
		return apierror.New(apierror.ErrBadRequest, "%v", err)
	}
	return nil
}

// Matches reports whether obj is selected.
func (r *Registry) Matches(res *scheme.Resource, sel Selectors, obj runtime.Object) bool {
	if sel.Labels != nil && !sel.Labels.Empty() {
		m, err := meta.Accessor(obj)
		if err != nil || !sel.Labels.Matches(labels.Set(m.GetLabels())) {
			return false
		}
	}
	return sel.Fields == nil || sel.Fields.Empty() || sel.Fields.Matches(r.strategy(res).Fields(obj))
}

// continueToken is the opaque list continuation: the revision to keep reading at and the
// next key.
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

// List reads a collection at one revision, filtered, at most opts.Limit items.
func (r *Registry) List(ctx context.Context, k Key, opts ListOptions) (ListResult, error) {
	res := k.Resource
	prefix := storagePrefix(res, k.Namespace)
	from, rev := prefix, opts.Revision
	if opts.Continue != "" {
		tok, err := decodeContinue(opts.Continue, prefix)
		if err != nil {
			return ListResult{}, err
		}
		from, rev = tok.Start, tok.Revision
	}
	chunk := int64(500)
	if opts.Limit > 0 && opts.Limit < chunk {
		chunk = opts.Limit
	}
	var out ListResult
	for {
		page, err := r.store.List(ctx, prefix, from, chunk, rev)
		if errors.Is(err, storage.ErrCompacted) && opts.Continue != "" {
			return ListResult{}, apierror.New(apierror.ErrGone, "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
		}
		if err != nil {
			return ListResult{}, storeErr(err)
		}
		rev = page.Revision
		out.Revision = rev
		for i, kv := range page.KVs {
			obj, err := r.Decode(res, kv.Value, kv.ModRevision)
			if err != nil {
				return ListResult{}, err
			}
			if !r.Matches(res, opts.Selectors, obj) {
				continue
			}
			out.Items = append(out.Items, obj)
			if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
				if page.More || i < len(page.KVs)-1 {
					out.Continue = encodeContinue(rev, kv.Key+"\x00")
				}
				return out, nil
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return out, nil
		}
		from = page.KVs[len(page.KVs)-1].Key + "\x00"
	}
}

// NewList wraps items in the list kind of res, at revision rev.
func NewList(res *scheme.Resource, items []runtime.Object, rev int64, cont string) (runtime.Object, error) {
	list := res.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	if rev > 0 {
		lm.SetResourceVersion(formatRV(rev))
	}
	lm.SetContinue(cont)
	list.GetObjectKind().SetGroupVersionKind(res.GVK.GroupVersion().WithKind(res.GVK.Kind + "List"))
	return list, nil
}

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }
