package crdschema

import "testing"

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
