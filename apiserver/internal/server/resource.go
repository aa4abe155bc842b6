package server

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// The verbs of every resource: read the request's options and body, call the registry,
// answer in the negotiated form. What differs between kinds lives in the registry's
// strategies.

func (s *Server) get(c *gin.Context, t target) {
	out, ok := s.negotiate(c, t.res, answerObject)
	if !ok {
		return
	}
	if _, err := getOptions(c); err != nil {
		writeError(c, err)
		return
	}
	kv, err := s.reg.Get(c.Request.Context(), t.key())
	if err != nil {
		writeError(c, err)
		return
	}
	s.respondStored(c, out, http.StatusOK, t.res, nil, kv.Value, kv.ModRevision)
}

// selectors turns parsed list options into the registry's, checking the fields named.
func (s *Server) selectors(t target, opts *internalversion.ListOptions) (registry.Selectors, error) {
	sel := registry.Selectors{Labels: opts.LabelSelector, Fields: opts.FieldSelector}
	if t.res.Storage != nil && sel.Fields != nil && !sel.Fields.Empty() {
		// Fields are named as the served version has them and selected on the stored ones.
		f, err := sel.Fields.Transform(func(label, value string) (string, string, error) {
			return scheme.Scheme.ConvertFieldLabel(t.res.GVK, label, value)
		})
		if err != nil {
			return sel, apierror.New(apierror.ErrBadRequest, "%v", err)
		}
		sel.Fields = f
	}
	return sel, s.reg.CheckSelectors(t.res.Stored(), sel)
}

func (s *Server) list(c *gin.Context, t target, opts *internalversion.ListOptions) {
	out, ok := s.negotiate(c, t.res, answerList)
	if !ok {
		return
	}
	sel, err := s.selectors(t, opts)
	if err != nil {
		writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	rev, err := s.listRevision(ctx, opts)
	if err != nil {
		writeError(c, err)
		return
	}
	res, err := s.reg.List(ctx, t.key(), registry.ListOptions{Selectors: sel, Limit: opts.Limit, Continue: opts.Continue, Revision: rev})
	if err != nil {
		writeError(c, err)
		return
	}
	list, err := registry.NewList(t.res.Stored(), res.Items, res.Revision, res.Continue)
	if err != nil {
		writeError(c, err)
		return
	}
	s.respond(c, out, http.StatusOK, list)
}

func (s *Server) create(c *gin.Context, t target) {
	out, ok := s.negotiate(c, t.res, answerObject)
	if !ok {
		return
	}
	opts, err := createOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	obj, err := s.readObject(c, t, opts.FieldValidation)
	if err != nil {
		writeError(c, err)
		return
	}
	w, err := s.reg.Create(c.Request.Context(), t.key(), obj, len(opts.DryRun) > 0)
	if err != nil {
		writeError(c, err)
		return
	}
	s.respondWritten(c, out, http.StatusCreated, t.res, w)
}

// readObject reads the body of a create or update as an object of the target's kind.
func (s *Server) readObject(c *gin.Context, t target, directive string) (runtime.Object, error) {
	data, err := readBody(c)
	if err != nil {
		return nil, err
	}
	return s.decodeObject(c, t.res, data, fieldValidation(directive))
}

// update handles PUT on the main endpoint and on status.
func (s *Server) update(c *gin.Context, t target) {
	out, ok := s.negotiate(c, t.res, answerObject)
	if !ok {
		return
	}
	opts, err := updateOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	obj, err := s.readObject(c, t, opts.FieldValidation)
	if err != nil {
		writeError(c, err)
		return
	}
	m, err := metaOf(obj)
	if err != nil {
		writeError(c, err)
		return
	}
	if err := t.checkNamed(m, ""); err != nil {
		writeError(c, err)
		return
	}
	w, err := s.reg.Update(c.Request.Context(), t.key(), registry.UpdateOptions{Subresource: t.subresource, DryRun: len(opts.DryRun) > 0},
		func(runtime.Object, storage.KV) (runtime.Object, string, error) {
			// A resourceVersion sent with the object is a precondition.
			return obj.DeepCopyObject(), m.GetResourceVersion(), nil
		})
	if err != nil {
		writeError(c, err)
		return
	}
	s.respondWritten(c, out, http.StatusOK, t.res, w)
}

// checkNamed rejects a body for another object than the URL names.
func (t target) checkNamed(m metav1.Object, mismatch string) error {
	if m.GetName() != t.name {
		if mismatch == "" {
			mismatch = "the name of the object (" + m.GetName() + ") does not match the name on the URL (" + t.name + ")"
		}
		return apierror.New(apierror.ErrBadRequest, "%s", mismatch)
	}
	if t.res.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != t.namespace {
		return apierror.New(apierror.ErrBadRequest, "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.GetNamespace(), t.namespace)
	}
	return nil
}

func (s *Server) patch(c *gin.Context, t target) {
	out, ok := s.negotiate(c, t.res, answerObject)
	if !ok {
		return
	}
	pt := types.PatchType(mediaType(c.GetHeader("Content-Type")))
	if err := checkPatchType(t.res, pt); err != nil {
		writeError(c, err)
		return
	}
	opts, err := patchOptions(c, pt)
	if err != nil {
		writeError(c, err)
		return
	}
	data, err := readLimited(c)
	if err != nil {
		writeError(c, err)
		return
	}
	directive, dry := fieldValidation(opts.FieldValidation), len(opts.DryRun) > 0
	ctx := c.Request.Context()
	w, err := s.reg.Update(ctx, t.key(), registry.UpdateOptions{Subresource: t.subresource, DryRun: dry},
		func(current runtime.Object, kv storage.KV) (runtime.Object, string, error) {
			// The stored bytes are the current object already, unless it is served in
			// another version than it is stored as.
			cur, ok := storage.WithResourceVersion(kv.Value, kv.ModRevision)
			if !ok || t.res.Storage != nil {
				served, err := toServed(t.res, current)
				if err != nil {
					return nil, "", err
				}
				if cur, err = encodeJSON(served); err != nil {
					return nil, "", err
				}
			}
			patched, err := applyPatch(t.res, pt, cur, data)
			if err != nil {
				return nil, "", err
			}
			obj, err := s.decodeJSONObject(c, t.res, patched, directive)
			if err != nil {
				return nil, "", err
			}
			m, err := metaOf(obj)
			if err != nil {
				return nil, "", err
			}
			if err := t.checkNamed(m, "the patch may not change metadata.name"); err != nil {
				return nil, "", err
			}
			// A patch that sets another resourceVersion makes it a precondition; otherwise
			// a patch that raced with another write is applied again to the newer object.
			precondition := ""
			if rv := m.GetResourceVersion(); rv != strconv.FormatInt(kv.ModRevision, 10) {
				precondition = rv
			}
			return obj, precondition, nil
		})
	if errors.Is(err, apierror.ErrNotFound) && pt == types.ApplyPatchType && t.subresource == "" {
		// Server-side apply creates what does not exist (yet, or any more).
		s.applyCreate(c, out, t, data, directive, dry)
		return
	}
	if err != nil {
		writeError(c, err)
		return
	}
	s.respondWritten(c, out, http.StatusOK, t.res, w)
}

// applyCreate creates the object of an apply configuration whose target does not exist.
func (s *Server) applyCreate(c *gin.Context, out output, t target, data []byte, directive string, dry bool) {
	j, err := yamlToJSON(data)
	if err != nil {
		writeError(c, apierror.New(apierror.ErrBadRequest, "the apply configuration is not valid YAML: %v", err))
		return
	}
	obj, err := s.decodeJSONObject(c, t.res, j, directive)
	if err != nil {
		writeError(c, err)
		return
	}
	m, err := metaOf(obj)
	if err != nil {
		writeError(c, err)
		return
	}
	if err := t.checkNamed(m, ""); err != nil {
		writeError(c, err)
		return
	}
	w, err := s.reg.Create(c.Request.Context(), t.key(), obj, dry)
	if err != nil {
		writeError(c, err)
		return
	}
	s.respondWritten(c, out, http.StatusCreated, t.res, w)
}

func (s *Server) delete(c *gin.Context, t target) {
	out, ok := s.negotiate(c, t.res, answerObject)
	if !ok {
		return
	}
	opts, err := deleteOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	deleted, err := s.reg.Delete(c.Request.Context(), t.key(), opts)
	if err != nil {
		writeError(c, err)
		return
	}
	s.respond(c, out, http.StatusOK, deleted)
}

func (s *Server) deleteCollection(c *gin.Context, t target) {
	out, ok := s.negotiate(c, t.res, answerList)
	if !ok {
		return
	}
	opts, err := deleteOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	lopts, err := listOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	sel, err := s.selectors(t, lopts)
	if err != nil {
		writeError(c, err)
		return
	}
	deleted, err := s.reg.DeleteCollection(c.Request.Context(), t.key(), sel, opts)
	if err != nil {
		writeError(c, err)
		return
	}
	list, err := registry.NewList(t.res.Stored(), deleted, 0, "")
	if err != nil {
		writeError(c, err)
		return
	}
	s.respond(c, out, http.StatusOK, list)
}
