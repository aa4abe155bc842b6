package server

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/gin-gonic/gin"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// readPatch reads a patch body of at most MaxBodyBytes.
func readPatch(c *gin.Context) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(c.Request.Body, MaxBodyBytes+1))
	if err != nil {
		return nil, apierror.New(apierror.ErrBadRequest, "reading request body: %v", err)
	}
	if len(data) > MaxBodyBytes {
		return nil, apierror.New(apierror.ErrRequestTooLarge, "the request body is larger than %d bytes", MaxBodyBytes)
	}
	return data, nil
}

// applyPatch applies a patch of the given type to the JSON of the current object.
func applyPatch(res *scheme.Resource, pt types.PatchType, current, patch []byte) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the JSON patch could not be decoded: %v", err)
		}
		out, err := p.Apply(current)
		if err != nil {
			return nil, apierror.New(apierror.ErrInvalid, "the JSON patch could not be applied: %v", err)
		}
		return out, nil
	case types.MergePatchType:
		if !json.Valid(patch) {
			return nil, apierror.New(apierror.ErrBadRequest, "the merge patch is not valid JSON")
		}
		out, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the merge patch could not be applied: %v", err)
		}
		return out, nil
	case types.StrategicMergePatchType:
		if !res.StrategicMerge() {
			return nil, apierror.New(apierror.ErrUnsupportedMediaType, "strategic merge patch is not supported for %s; use a JSON merge patch (application/merge-patch+json)", res.GVK.GroupKind())
		}
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the strategic merge patch is not a JSON object: %v", err)
		}
		out, err := strategicpatch.StrategicMergePatch(current, patch, res.New())
		if err != nil {
			return nil, apierror.New(apierror.ErrInvalid, "the strategic merge patch could not be applied: %v", err)
		}
		return out, nil
	case types.ApplyPatchType:
		// Server-side apply without field ownership: the applied configuration is merged like a
		// JSON merge patch, which is what a single manager sees.
		j, err := yaml.YAMLToJSON(patch)
		if err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the apply configuration is not valid YAML: %v", err)
		}
		out, err := jsonpatch.MergePatch(current, j)
		if err != nil {
			return nil, apierror.New(apierror.ErrBadRequest, "the apply configuration could not be applied: %v", err)
		}
		return out, nil
	}
	return nil, apierror.New(apierror.ErrUnsupportedMediaType, "the patch content type %q is not supported: use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json", string(pt))
}

func (s *Server) patch(c *gin.Context, t target) {
	pt := types.PatchType(mediaType(c.GetHeader("Content-Type")))
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyPatchType:
	default:
		writeError(c, apierror.New(apierror.ErrUnsupportedMediaType, "the patch content type %q is not supported: use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json", string(pt)))
		return
	}
	directive, dry, err := writeOptions(c)
	if err != nil {
		writeError(c, err)
		return
	}
	data, err := readPatch(c)
	if err != nil {
		writeError(c, err)
		return
	}
	for attempt := 0; attempt < maxRetries; attempt++ {
		old, kv, err := s.read(c.Request.Context(), t)
		if errors.Is(err, apierror.ErrNotFound) && pt == types.ApplyPatchType {
			// Server-side apply creates what does not exist yet.
			s.applyCreate(c, t, data, directive, dry)
			return
		}
		if err != nil {
			writeError(c, err)
			return
		}
		// The stored bytes are the current object already; no need to encode what was read.
		current, ok := storage.WithResourceVersion(kv.Value, kv.ModRevision)
		if !ok {
			if current, err = json.Marshal(old); err != nil {
				writeError(c, err)
				return
			}
		}
		patched, err := applyPatch(t.res, pt, current, data)
		if err != nil {
			writeError(c, err)
			return
		}
		obj, m, err := decodeNamed(c, t.res, patched, directive, t.name, "the patch may not change metadata.name")
		if err != nil {
			writeError(c, err)
			return
		}
		// A patch that names a resourceVersion is a precondition; otherwise the patch is
		// re-applied to the newest object when it raced with another write.
		conditional := m.GetResourceVersion() != strconv.FormatInt(kv.ModRevision, 10)
		out, code, err := s.commitUpdate(c.Request.Context(), t, old, kv, obj, conditional, dry)
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

// applyCreate creates the object of an apply configuration whose target does not exist.
func (s *Server) applyCreate(c *gin.Context, t target, data []byte, directive string, dry bool) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		writeError(c, apierror.New(apierror.ErrBadRequest, "the apply configuration is not valid YAML: %v", err))
		return
	}
	obj, _, err := decodeNamed(c, t.res, j, directive, t.name, "")
	if err != nil {
		writeError(c, err)
		return
	}
	s.createObject(c, t, obj, dry)
}
