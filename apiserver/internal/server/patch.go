package server

import (
	"encoding/json"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

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

// checkPatchType accepts the patch types Kubernetes serves; strategic merge needs the Go
// types' patch strategy tags.
func checkPatchType(res *scheme.Resource, pt types.PatchType) error {
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.ApplyPatchType:
		return nil
	case types.StrategicMergePatchType:
		if !res.StrategicMerge() {
			return apierror.New(apierror.ErrUnsupportedMediaType, "strategic merge patch is not supported for %s; use a JSON merge patch (application/merge-patch+json)", res.GVK.GroupKind())
		}
		return nil
	}
	return apierror.New(apierror.ErrUnsupportedMediaType, "the patch content type %q is not supported: use application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json or application/apply-patch+yaml", string(pt))
}

func yamlToJSON(data []byte) ([]byte, error) { return yaml.YAMLToJSON(data) }

func encodeJSON(obj runtime.Object) ([]byte, error) { return scheme.MarshalJSON(obj) }
