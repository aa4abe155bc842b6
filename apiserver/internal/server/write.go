package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// maxRetries bounds how often an unconditional write re-reads after losing a race.
const maxRetries = 8

var errRetry = errors.New("lost a write race; retry")

func dryRun(c *gin.Context) (bool, error) {
	for _, v := range c.QueryArray("dryRun") {
		if v != "All" {
			return false, apierror.New(apierror.ErrBadRequest, "dryRun must be All, not %q", v)
		}
		return true, nil
	}
	return false, nil
}

// writeOptions reads what every write takes from the query: the field validation directive
// and whether it is a dry run.
func writeOptions(c *gin.Context) (directive string, dry bool, err error) {
	if directive, err = fieldValidation(c); err != nil {
		return "", false, err
	}
	dry, err = dryRun(c)
	return directive, dry, err
}

// nameAlphabet avoids vowels and look-alike characters, as Kubernetes' generated names do.
const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
	}
	return string(b)
}

func (s *Server) invalid(t target, name string, errs field.ErrorList) error {
	return apierror.Invalid(t.res.GVK.Group, t.res.GVK.Kind, name, errs)
}

func (s *Server) create(c *gin.Context, t target) {
	if t.res.Namespaced && t.namespace == "" {
		s.methodNotAllowed(c, c.Request.Method, t)
		return
	}
	directive, dry, err := writeOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	data, err := readBody(c)
	if err != nil {
		writeError(c, err)
		return
	}
	obj, err := decodeObject(c, t.res, data, directive)
	if err != nil {
		writeError(c, err)
		return
	}
	s.createObject(c, t, obj, dry)
}

// createObject stores a decoded object as new and answers the request.
func (s *Server) createObject(c *gin.Context, t target, obj runtime.Object, dry bool) {
	ctx := c.Request.Context()
	m, err := metaOf(obj)
	if err != nil {
		writeError(c, err)
		return
	}
	if t.res.Namespaced {
		if m.GetNamespace() != "" && m.GetNamespace() != t.namespace {
			writeError(c, apierror.New(apierror.ErrBadRequest, "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.GetNamespace(), t.namespace))
			return
		}
		m.SetNamespace(t.namespace)
	} else {
		m.SetNamespace("")
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	if m.GetName() == "" && !generated {
		writeError(c, s.invalid(t, "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}))
		return
	}
	if t.res.Namespaced {
		if err := s.ns.admit(ctx, t.namespace); err != nil {
			writeError(c, err)
			return
		}
	}
	now := metav1.NewTime(s.cfg.Now().Truncate(1e9))
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(now)
	m.SetResourceVersion("")
	m.SetGeneration(1)
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	prepareForCreate(t.res, obj)
	if s.cfg.Default != nil {
		s.cfg.Default(obj)
	}
	written := false
	if !dry {
		undo, err := s.alloc.allocate(ctx, nil, obj)
		if err != nil {
			writeError(c, err)
			return
		}
		defer func() {
			if !written {
				undo()
			}
		}()
	}
	for attempt := 0; ; attempt++ {
		if generated {
			m.SetName(m.GetGenerateName() + randomSuffix())
		}
		if s.cfg.ValidateCreate != nil {
			if errs := s.cfg.ValidateCreate(obj); len(errs) > 0 {
				writeError(c, s.invalid(t, m.GetName(), errs))
				return
			}
		}
		if dry {
			s.respond(c, http.StatusCreated, obj)
			return
		}
		stored, err := encodeStored(obj, t.res)
		if err != nil {
			writeError(c, err)
			return
		}
		rev, err := s.store.Create(ctx, storageKey(t.res, t.namespace, m.GetName()), stored)
		if errors.Is(err, storage.ErrKeyExists) {
			if generated && attempt < maxRetries {
				continue
			}
			writeError(c, apierror.AlreadyExists(t.res.GVK.Group, t.res.Plural, m.GetName()))
			return
		}
		if err != nil {
			writeError(c, storeErr(err))
			return
		}
		written = true
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		s.afterWrite(t, obj)
		s.respondStored(c, http.StatusCreated, t.res, obj, stored, rev)
		return
	}
}

// afterWrite lets background work react to a committed change.
func (s *Server) afterWrite(t target, obj runtime.Object) {
	if t.res.Plural == "namespaces" {
		s.ns.changed(obj)
	}
}

// update handles PUT on the main endpoint and on status.
func (s *Server) update(c *gin.Context, t target) {
	directive, dry, err := writeOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	data, err := readBody(c)
	if err != nil {
		writeError(c, err)
		return
	}
	obj, m, err := decodeNamed(c, t.res, data, directive, t.name, "")
	if err != nil {
		writeError(c, err)
		return
	}
	if t.res.Namespaced && m.GetNamespace() != "" && m.GetNamespace() != t.namespace {
		writeError(c, apierror.New(apierror.ErrBadRequest, "the namespace of the provided object (%s) does not match the namespace sent on the request (%s)", m.GetNamespace(), t.namespace))
		return
	}
	conditional := m.GetResourceVersion() != ""
	for attempt := 0; attempt < maxRetries; attempt++ {
		old, kv, err := s.read(c.Request.Context(), t)
		if err != nil {
			writeError(c, err)
			return
		}
		out, code, err := s.commitUpdate(c.Request.Context(), t, old, kv, obj.DeepCopyObject(), conditional, dry)
		if errors.Is(err, errRetry) {
			continue
		}
		if err != nil {
			writeError(c, err)
			return
		}
		s.respond(c, code, out)
		return
	}
	writeError(c, apierror.Conflict(t.res.GVK.Group, t.res.Plural, t.name, "too many concurrent writes; try again"))
}

func conflictModified(t target) error {
	return apierror.Conflict(t.res.GVK.Group, t.res.Plural, t.name, "the object has been modified; please apply your changes to the latest version and try again")
}

// commitUpdate writes obj over old (read at kv). With conditional, obj's resourceVersion must be
// old's; otherwise a lost race returns errRetry so the caller re-reads.
func (s *Server) commitUpdate(ctx context.Context, t target, old runtime.Object, kv storage.KV, obj runtime.Object, conditional, dry bool) (runtime.Object, int, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, 0, err
	}
	om, err := metaOf(old)
	if err != nil {
		return nil, 0, err
	}
	if conditional {
		rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
		if err != nil {
			return nil, 0, s.invalid(t, t.name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), m.GetResourceVersion(), "must be an integer")})
		}
		if rv != kv.ModRevision {
			return nil, 0, conflictModified(t)
		}
	}
	if t.subresource == "status" {
		// Only status comes from the client; everything else stays as stored.
		status := obj
		obj = old.DeepCopyObject()
		copyField(obj, status, "Status")
		if m, err = metaOf(obj); err != nil {
			return nil, 0, err
		}
	} else {
		// Bindings are written by the server itself, status included.
		if hasStatus(t.res) && t.subresource != "binding" {
			copyField(obj, old, "Status")
		}
		// Clients may not change identity or deletion bookkeeping.
		m.SetUID(om.GetUID())
		m.SetCreationTimestamp(om.GetCreationTimestamp())
		m.SetDeletionTimestamp(om.GetDeletionTimestamp())
		m.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
		m.SetGenerateName(om.GetGenerateName())
		m.SetGeneration(om.GetGeneration())
		if specChanged(obj, old) {
			m.SetGeneration(om.GetGeneration() + 1)
		}
	}
	m.SetNamespace(om.GetNamespace())
	m.SetSelfLink("")
	if s.cfg.DefaultUpdate != nil {
		s.cfg.DefaultUpdate(obj, old)
	} else if s.cfg.Default != nil {
		s.cfg.Default(obj)
	}
	written := false
	if !dry && t.subresource == "" {
		undo, err := s.alloc.allocate(ctx, old, obj)
		if err != nil {
			return nil, 0, err
		}
		defer func() {
			if written {
				s.alloc.released(ctx, old, obj)
			} else {
				undo()
			}
		}()
	}
	var errs field.ErrorList
	if s.cfg.ValidateCreate != nil {
		errs = append(errs, s.cfg.ValidateCreate(obj)...)
	}
	if s.cfg.ValidateUpdate != nil && t.subresource != "binding" {
		errs = append(errs, s.cfg.ValidateUpdate(obj, old)...)
	}
	if len(errs) > 0 {
		return nil, 0, s.invalid(t, t.name, errs)
	}
	key := storageKey(t.res, t.namespace, t.name)
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 && !waitsForNamespaceFinalize(obj) {
		// The last finalizer is gone from an object being deleted: delete it now.
		if dry {
			return obj, http.StatusOK, nil
		}
		_, rev, err := s.store.Delete(ctx, key, kv.ModRevision)
		if errors.Is(err, storage.ErrRevisionMismatch) {
			return nil, 0, s.raceErr(t, conditional)
		}
		if errors.Is(err, storage.ErrKeyNotFound) {
			return nil, 0, notFound(t)
		}
		if err != nil {
			return nil, 0, storeErr(err)
		}
		m.SetResourceVersion(strconv.FormatInt(rev, 10))
		s.alloc.released(ctx, old, nil)
		return obj, http.StatusOK, nil
	}
	stored, err := encodeStored(obj, t.res)
	if err != nil {
		return nil, 0, err
	}
	if bytes.Equal(stored, kv.Value) {
		// Nothing changed: no write, no new revision, no event.
		m.SetResourceVersion(strconv.FormatInt(kv.ModRevision, 10))
		return obj, http.StatusOK, nil
	}
	if dry {
		return obj, http.StatusOK, nil
	}
	rev, err := s.store.Update(ctx, key, stored, kv.ModRevision)
	if errors.Is(err, storage.ErrRevisionMismatch) {
		return nil, 0, s.raceErr(t, conditional)
	}
	if errors.Is(err, storage.ErrKeyNotFound) {
		return nil, 0, notFound(t)
	}
	if err != nil {
		return nil, 0, storeErr(err)
	}
	written = true
	m.SetResourceVersion(strconv.FormatInt(rev, 10))
	s.afterWrite(t, obj)
	return obj, http.StatusOK, nil
}

func (s *Server) raceErr(t target, conditional bool) error {
	if conditional {
		return conflictModified(t)
	}
	return errRetry
}
