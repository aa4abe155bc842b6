package crdschema

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Scale reads the scale subresource of obj: the replicas at specReplicasPath
// and statusReplicasPath (0 when absent, as upstream) and the selector string
// at labelSelectorPath. ok is false when the version has no scale
// subresource.
func (v *Version) Scale(obj *unstructured.Unstructured) (spec, status int32, selector string, ok bool, err error) {
	if v.scale == nil {
		return 0, 0, "", false, nil
	}
	specReplicas, _, err := unstructured.NestedInt64(obj.Object, splitPath(v.scale.SpecReplicasPath)...)
	if err != nil {
		return 0, 0, "", true, fmt.Errorf("read %s: %w", v.scale.SpecReplicasPath, err)
	}
	statusReplicas, _, err := unstructured.NestedInt64(obj.Object, splitPath(v.scale.StatusReplicasPath)...)
	if err != nil {
		return 0, 0, "", true, fmt.Errorf("read %s: %w", v.scale.StatusReplicasPath, err)
	}
	if p := v.scale.LabelSelectorPath; p != nil && *p != "" {
		if selector, _, err = unstructured.NestedString(obj.Object, splitPath(*p)...); err != nil {
			return 0, 0, "", true, fmt.Errorf("read %s: %w", *p, err)
		}
	}
	return int32(specReplicas), int32(statusReplicas), selector, true, nil
}

// SetScale writes replicas at specReplicasPath, creating the parent objects
// as needed; an error when the version has no scale subresource or a parent
// on the path is not an object.
func (v *Version) SetScale(obj *unstructured.Unstructured, replicas int32) error {
	if v.scale == nil {
		return fmt.Errorf("%s has no scale subresource", v.kind)
	}
	if err := unstructured.SetNestedField(obj.Object, int64(replicas), splitPath(v.scale.SpecReplicasPath)...); err != nil {
		return fmt.Errorf("set %s: %w", v.scale.SpecReplicasPath, err)
	}
	return nil
}
