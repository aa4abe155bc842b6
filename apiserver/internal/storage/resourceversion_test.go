package storage

import "testing"

func TestWithResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		name, stored, want string
		ok                 bool
	}{
		{"typed", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"x":"y"}}`,
			`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7","name":"a"},"data":{"x":"y"}}`, true},
		{"typed, empty metadata", `{"kind":"X","apiVersion":"v1","metadata":{}}`, `{"kind":"X","apiVersion":"v1","metadata":{"resourceVersion":"7"}}`, true},
		{"custom, keys sorted", `{"apiVersion":"e.com/v1","kind":"W","metadata":{"name":"a"},"spec":{"metadata":{}}}`,
			`{"apiVersion":"e.com/v1","kind":"W","metadata":{"resourceVersion":"7","name":"a"},"spec":{"metadata":{}}}`, true},
		// A field sorted before metadata may hold a "metadata" of its own.
		{"custom, a field before metadata", `{"apiVersion":"e.com/v1","data":{"metadata":{}},"kind":"W","metadata":{"name":"a"}}`, "", false},
		{"no metadata", `{"kind":"X","apiVersion":"v1"}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := WithResourceVersion([]byte(tc.stored), 7)
			if ok != tc.ok || (ok && string(out) != tc.want) {
				t.Errorf("got %s, %v; want %s, %v", out, ok, tc.want, tc.ok)
			}
		})
	}
}
