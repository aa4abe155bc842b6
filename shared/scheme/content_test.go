package scheme

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var contentStrings = []string{"", "plain", `quote " and \ backslash`, "<tag> & more", "tab\tnew\nline\x01", "ünïcödé", "\u2028\u2029", "bad \xff utf-8", "emoji 😀", "a.b/c-d_e"}

// randomContent is a value as JSON decoding into unstructured content leaves it, with the
// odd types (floats, nil maps and slices) json.Marshal treats specially.
func randomContent(r *rand.Rand, depth int) any {
	n := r.IntN(10)
	if depth > 3 {
		n = r.IntN(6)
	}
	switch n {
	case 0:
		return nil
	case 1:
		return contentStrings[r.IntN(len(contentStrings))]
	case 2:
		return r.IntN(2) == 0
	case 3:
		return []int64{0, -1, math.MaxInt64, math.MinInt64, r.Int64()}[r.IntN(5)]
	case 4:
		return []float64{0.5, -2.25, 1e21, 1e-7, 123456789.125, 3, math.Copysign(0, -1)}[r.IntN(7)]
	case 5:
		return json.Number("12.50")
	case 6:
		if r.IntN(4) == 0 {
			return map[string]any(nil)
		}
		m := map[string]any{}
		for range r.IntN(5) {
			m[contentStrings[r.IntN(len(contentStrings))]+string(rune('a'+r.IntN(26)))] = randomContent(r, depth+1)
		}
		return m
	default:
		if r.IntN(4) == 0 {
			return []any(nil)
		}
		var s []any
		for range r.IntN(4) {
			s = append(s, randomContent(r, depth+1))
		}
		return s
	}
}

func TestMarshalContentIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		v := randomContent(r, 0)
		want, wantErr := json.Marshal(v)
		got, err := MarshalContent(v)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("value %d %#v:\nMarshalContent %s (%v)\njson.Marshal   %s (%v)", i, v, got, err, want, wantErr)
		}
	}
	if _, err := MarshalContent(map[string]any{"x": math.NaN()}); err == nil {
		t.Error("NaN encoded; json.Marshal refuses it")
	}
	u := &unstructured.Unstructured{Object: map[string]any{"kind": "Widget", "apiVersion": "example.com/v1", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(3)}}}
	want, _ := json.Marshal(u)
	if got, err := MarshalUnstructured(u); err != nil || !bytes.Equal(got, want) {
		t.Errorf("MarshalUnstructured %s (%v), json.Marshal %s", got, err, want)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"kind": "WidgetList", "apiVersion": "example.com/v1", "metadata": map[string]any{"resourceVersion": "7"}},
		Items: []unstructured.Unstructured{*u, {Object: map[string]any{"kind": "Widget", "spec": []any{"<x>"}}}}}
	for _, v := range []any{u, list, &unstructured.UnstructuredList{}, &unstructured.Unstructured{}, map[string]int{"typed": 1}} {
		want, _ := json.Marshal(v)
		if got, err := MarshalJSON(v); err != nil || !bytes.Equal(got, want) {
			t.Errorf("MarshalJSON(%#v) %s (%v), json.Marshal %s", v, got, err, want)
		}
	}
}

func TestUnmarshalContent(t *testing.T) {
	got, err := UnmarshalContent([]byte(`{"a":1,"b":1.5,"c":[true,null,"x"],"d":{"e":12345678901234}}`))
	want := map[string]any{"a": int64(1), "b": 1.5, "c": []any{true, nil, "x"}, "d": map[string]any{"e": int64(12345678901234)}}
	if err != nil || !cmp.Equal(got, want) {
		t.Errorf("UnmarshalContent: %#v (%v), want %#v", got, err, want)
	}
	for _, bad := range []string{`null`, `[1]`, `"s"`, `{"a":`, ``} {
		if _, err := UnmarshalContent([]byte(bad)); err == nil {
			t.Errorf("UnmarshalContent(%q) succeeded", bad)
		}
	}
}
