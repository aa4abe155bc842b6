package apply

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/scheme"
)

// LastAppliedAnnotation holds the configuration last applied, the "original" of the three-way
// patch; the real kubectl uses the same key, so either kubectl can apply over the other.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Action is what apply does with one object.
type Action string

// The outcomes, worded as kubectl prints them.
const (
	Create    Action = "created"
	Configure Action = "configured"
	Unchanged Action = "unchanged"
)

// Decision is the action and, for Configure, the patch to send.
type Decision struct {
	Action    Action
	PatchType types.PatchType
	Patch     []byte
	// Object is what Create sends: the desired object with the annotation set.
	Object *unstructured.Unstructured
}

// WithLastApplied returns a copy of desired whose last-applied annotation is desired itself
// (without that annotation), which is what both create and patch send.
func WithLastApplied(desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	clean := desired.DeepCopy()
	ann := clean.GetAnnotations()
	delete(ann, LastAppliedAnnotation)
	if len(ann) == 0 {
		unstructured.RemoveNestedField(clean.Object, "metadata", "annotations")
	} else {
		clean.SetAnnotations(ann)
	}
	data, err := json.Marshal(recorded(clean).Object)
	if err != nil {
		return nil, fmt.Errorf("encode last-applied configuration: %w", err)
	}
	out := clean.DeepCopy()
	ann = out.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[LastAppliedAnnotation] = string(data) + "\n"
	out.SetAnnotations(ann)
	return out, nil
}

// recorded is what the last-applied annotation keeps of obj: obj itself, but a Function's
// spec.source with each file's SHA-256 in place of its contents. Annotations are bounded at
// 256 KiB together and a source may be 1 MiB; the next apply only needs the file names from
// it, to remove the files no longer applied (changes come from comparing with the live object).
func recorded(obj *unstructured.Unstructured) *unstructured.Unstructured {
	gvk := obj.GroupVersionKind()
	src, ok, _ := unstructured.NestedMap(obj.Object, "spec", "source")
	if gvk.Group != serverlessv1.GroupName || gvk.Kind != "Function" || !ok {
		return obj
	}
	for name, body := range src {
		if s, isString := body.(string); isString {
			src[name] = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(s)))
		}
	}
	out := obj.DeepCopy()
	_ = unstructured.SetNestedMap(out.Object, src, "spec", "source")
	return out
}

// Decide compares desired with live (nil when the object does not exist). Built-in kinds get a
// strategic merge patch, which merges lists such as containers by key; kinds without
// strategic-merge metadata (our serverless group) get a JSON merge patch.
func Decide(desired, live *unstructured.Unstructured) (Decision, error) {
	modifiedObj, err := WithLastApplied(desired)
	if err != nil {
		return Decision{}, err
	}
	if live == nil {
		return Decision{Action: Create, Object: modifiedObj}, nil
	}
	modified, err := json.Marshal(modifiedObj.Object)
	if err != nil {
		return Decision{}, fmt.Errorf("encode desired object: %w", err)
	}
	current, err := json.Marshal(live.Object)
	if err != nil {
		return Decision{}, fmt.Errorf("encode live object: %w", err)
	}
	var original []byte
	if la, ok := live.GetAnnotations()[LastAppliedAnnotation]; ok {
		original = []byte(la)
	}
	// Changing these would move or replace the object, which apply must refuse rather than hide.
	preconditions := []mergepatch.PreconditionFunc{
		mergepatch.RequireKeyUnchanged("apiVersion"),
		mergepatch.RequireKeyUnchanged("kind"),
		mergepatch.RequireMetadataKeyUnchanged("name"),
	}
	gvk := desired.GroupVersionKind()
	var d Decision
	if typed, ok := strategicType(gvk); ok {
		meta, err := strategicpatch.NewPatchMetaFromStruct(typed)
		if err != nil {
			return Decision{}, fmt.Errorf("patch metadata of %s: %w", gvk.Kind, err)
		}
		d.PatchType = types.StrategicMergePatchType
		d.Patch, err = strategicpatch.CreateThreeWayMergePatch(original, modified, current, meta, true, preconditions...)
		if err != nil {
			return Decision{}, fmt.Errorf("create patch for %s %q: %w", gvk.Kind, desired.GetName(), err)
		}
	} else {
		d.PatchType = types.MergePatchType
		d.Patch, err = jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, current, preconditions...)
		if err != nil {
			return Decision{}, fmt.Errorf("create patch for %s %q: %w", gvk.Kind, desired.GetName(), err)
		}
	}
	if string(d.Patch) == "{}" {
		return Decision{Action: Unchanged}, nil
	}
	d.Action = Configure
	return d, nil
}

// strategicType returns an empty Go struct of gvk when the kind is a built-in Kubernetes kind,
// whose struct tags carry the strategic-merge keys.
func strategicType(gvk schema.GroupVersionKind) (any, bool) {
	if gvk.Group == "serverless.minik8s.io" {
		return nil, false
	}
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	return obj, true
}
