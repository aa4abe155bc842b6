package statepath

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func doc(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad fixture %s: %v", s, err)
	}
	return v
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"", "a", "$.", "$..a", "$.a[", "$[x]", "$[-1]", "$.*", "$.a b", "$x", "$[?(@.a)]"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) succeeded, want an error", s)
		}
	}
}

func TestGet(t *testing.T) {
	in := doc(t, `{"a": {"b": [10, {"c": "x"}]}, "d e": true, "n": null}`)
	cases := []struct {
		path string
		want any
		ok   bool
	}{
		{"$", in, true},
		{"$.a.b[0]", 10.0, true},
		{"$.a.b[1].c", "x", true},
		{"$['d e']", true, true},
		{`$["a"].b[1]['c']`, "x", true},
		{"$.n", nil, true},
		{"$.missing", nil, false},
		{"$.a.b[2]", nil, false},
		{"$.a[0]", nil, false},
		{"$.a.b.c", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			got, ok := MustParse(tc.path).Get(in)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSet(t *testing.T) {
	cases := []struct {
		root, path, val, want string
		err                   bool
	}{
		{`{"a":1}`, "$", `2`, `2`, false},
		{`{"a":1}`, "$.b", `2`, `{"a":1,"b":2}`, false},
		{`{"a":1}`, "$.b.c", `[1]`, `{"a":1,"b":{"c":[1]}}`, false},
		{`{"a":[1,{"x":0}]}`, "$.a[1].x", `5`, `{"a":[1,{"x":5}]}`, false},
		{`{"a":1}`, "$.a.b", `2`, ``, true},
		{`{"a":[1]}`, "$.a[3]", `2`, ``, true},
		{`null`, "$.r", `2`, `{"r":2}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.path+"="+tc.val, func(t *testing.T) {
			root := doc(t, tc.root)
			before := doc(t, tc.root)
			got, err := MustParse(tc.path).Set(root, doc(t, tc.val))
			if tc.err {
				if err == nil {
					t.Fatalf("Set = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
			if diff := cmp.Diff(doc(t, tc.want), got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, root); diff != "" {
				t.Errorf("Set changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

// FuzzPath: any text either fails to parse or gives a path that reads and writes any
// document without panicking, and whose Set value Get reads back.
func FuzzPath(f *testing.F) {
	for _, s := range []string{"$", "$.a", "$.a[0].b", "$['x y'][2]", `$["q"]`, "$..", "$[", "$.a.b.c[10]"} {
		f.Add(s, `{"a": [{"b": 1}], "x y": [0, 1, 2]}`)
	}
	f.Fuzz(func(t *testing.T, path, doc string) {
		p, err := Parse(path)
		if err != nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		p.Get(v)
		out, err := p.Set(v, "marker")
		if err != nil {
			return
		}
		if got, ok := p.Get(out); !ok || got != "marker" {
			t.Errorf("Set %s then Get = %v, %v", path, got, ok)
		}
	})
}
