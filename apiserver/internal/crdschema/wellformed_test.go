package crdschema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestWellFormedMetadata(t *testing.T) {
	for _, tc := range []struct {
		name string
		meta map[string]any
		want bool
	}{
		{"usual", map[string]any{"name": "w", "namespace": "d", "generation": int64(2), "labels": map[string]any{"a": "b"},
			"finalizers": []any{"x"}, "creationTimestamp": "2026-01-02T03:04:05Z"}, true},
		{"unknown field", map[string]any{"name": "w", "color": "red"}, false},
		{"labels as a list", map[string]any{"labels": []any{"a"}}, false},
		{"label value not a string", map[string]any{"labels": map[string]any{"a": int64(1)}}, false},
		{"fractional timestamp", map[string]any{"creationTimestamp": "2026-01-02T03:04:05.5Z"}, false},
		{"generation as text", map[string]any{"generation": "2"}, false},
		{"owner references take the round trip", map[string]any{"ownerReferences": []any{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wellFormedMetadata(tc.meta); got != tc.want {
				t.Errorf("wellFormedMetadata = %v, want %v", got, tc.want)
			}
		})
	}
	// Malformed metadata still loses what ObjectMeta cannot hold.
	v := widgetVersion(t, "v1")
	obj := map[string]any{"apiVersion": "x", "kind": "y", "metadata": map[string]any{"name": "w", "color": "red", "labels": []any{"a"}}}
	v.Prune(obj)
	m := obj["metadata"].(map[string]any)
	if _, ok := m["color"]; ok {
		t.Errorf("an unknown metadata field survived pruning: %v", m)
	}
	if _, ok := m["labels"]; ok {
		t.Errorf("malformed labels survived pruning: %v", m)
	}
}

// fillObjectMeta reads well-formed metadata as the converter does.
func TestFillObjectMetaMatchesTheConverter(t *testing.T) {
	m := map[string]any{"name": "w", "generateName": "w-", "namespace": "d", "uid": "u", "resourceVersion": "5",
		"generation": int64(3), "deletionGracePeriodSeconds": int64(30), "creationTimestamp": "2026-01-02T03:04:05Z",
		"deletionTimestamp": "2026-01-02T03:05:05Z", "labels": map[string]any{"a": "b"},
		"annotations": map[string]any{"c": "d"}, "finalizers": []any{"x", "y"}}
	if !wellFormedMetadata(m) {
		t.Fatal("sample not well formed")
	}
	var want, got metav1.ObjectMeta
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &want); err != nil {
		t.Fatal(err)
	}
	fillObjectMeta(m, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fillObjectMeta differs from the converter (-want +got):\n%s", diff)
	}
}
