package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
)

// HashLabel carries a revision's hash, on the revision and on the pods made from it.
const HashLabel = appsv1.ControllerRevisionHashLabelKey

// maxPrefix keeps a revision's name, prefix + "-" + hash, within a DNS subdomain's length.
const maxPrefix = 223

// Name is the name of the revision of a parent called prefix with the given hash.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + "-" + hash
}

// Hash hashes a revision's data, and the collision count when there is one: FNV-32 over the
// raw data, then the count in decimal, spelled in the alphabet of names.
func Hash(r *appsv1.ControllerRevision, collisionCount *int32) string {
	h := fnv.New32()
	h.Write(r.Data.Raw)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// New builds revision number revision of parent, holding data, labelled with the
// template's labels and its hash, and controlled by parent.
func New(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string, data []byte, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	labels := maps.Clone(templateLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       parent.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: revision,
	}
	hash := Hash(r, collisionCount)
	r.Name = Name(parent.GetName(), hash)
	r.Labels[HashLabel] = hash
	return r
}

// Equal reports whether two revisions hold the same data.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return sameJSON(a.Data.Raw, b.Data.Raw)
}

func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

// FindEqual returns the revisions holding the same data as needle.
func FindEqual(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if Equal(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// Sort orders revisions oldest first: by number, then creation time, then name.
func Sort(revisions []*appsv1.ControllerRevision) {
	slices.SortStableFunc(revisions, func(a, b *appsv1.ControllerRevision) int {
		if a.Revision != b.Revision {
			return cmpInt(a.Revision, b.Revision)
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if a.CreationTimestamp.Before(&b.CreationTimestamp) {
				return -1
			}
			return 1
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Next is the number the next revision gets: one more than the highest, or 1.
func Next(revisions []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revisions {
		highest = max(highest, r.Revision)
	}
	return highest + 1
}

// TemplatePatch is the data a DaemonSet's or StatefulSet's revision holds, as upstream
// writes it: a strategic merge patch that replaces spec.template with the object's, which
// kubectl rollout undo sends back to restore it.
func TemplatePatch(obj runtime.Object) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var raw struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if raw.Spec.Template == nil {
		return nil, fmt.Errorf("%T has no spec.template", obj)
	}
	raw.Spec.Template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": raw.Spec.Template}})
}
