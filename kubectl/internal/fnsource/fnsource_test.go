package fnsource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// tree writes files (relative path → content) under a fresh directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func function(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	doc := "apiVersion: serverless.minik8s.io/v1\nkind: Function\nmetadata:\n  name: fn\nspec:\n" + spec
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestPack(t *testing.T) {
	dir := tree(t, map[string]string{
		"fn.yaml":                          "(the manifest)",
		"src/main.py":                      "import lib.util\ndef handle(e):\n    return e\n",
		"src/lib/__init__.py":              "",
		"src/lib/util.py":                  "X = 1\n",
		"src/requirements.txt":             "requests==2.31\n",
		"src/lib/requirements.txt":         "not the folder's own\n",
		"src/.env":                         "SECRET=1",
		"src/.git/config":                  "[core]",
		"src/__pycache__/main.cpython.pyc": "\x00\x01",
		"src/lib/util.pyc":                 "\x00\x02",
		"single/handler.py":                "def handle(e):\n    return 1\n",
	})
	manifest := filepath.Join(dir, "fn.yaml")
	tests := []struct {
		name    string
		spec    string
		want    map[string]any // spec after packing
		wantErr string
	}{
		{name: "folder", spec: "  handler: main.handle\n  sourcePath: src\n", want: map[string]any{
			"handler": "main.handle",
			"source": map[string]any{
				"main.py": "import lib.util\ndef handle(e):\n    return e\n", "lib/__init__.py": "", "lib/util.py": "X = 1\n",
				"lib/requirements.txt": "not the folder's own\n",
			},
			"requirements": "requests==2.31\n",
		}},
		{name: "manifest's requirements win", spec: "  handler: main.handle\n  sourcePath: ./src/\n  requirements: pillow\n", want: map[string]any{
			"handler": "main.handle",
			"source": map[string]any{
				"main.py": "import lib.util\ndef handle(e):\n    return e\n", "lib/__init__.py": "", "lib/util.py": "X = 1\n",
				"lib/requirements.txt": "not the folder's own\n",
			},
			"requirements": "pillow",
		}},
		{name: "file", spec: "  handler: handler.handle\n  sourcePath: single/handler.py\n", want: map[string]any{
			"handler": "handler.handle",
			"source":  map[string]any{"handler.py": "def handle(e):\n    return 1\n"},
		}},
		{name: "absolute", spec: "  handler: handler.handle\n  sourcePath: " + filepath.Join(dir, "single") + "\n", want: map[string]any{
			"handler": "handler.handle",
			"source":  map[string]any{"handler.py": "def handle(e):\n    return 1\n"},
		}},
		{name: "inline source is left alone", spec: "  handler: m.h\n  source:\n    m.py: x\n", want: map[string]any{
			"handler": "m.h", "source": map[string]any{"m.py": "x"},
		}},
		{name: "missing", spec: "  handler: m.h\n  sourcePath: nope\n",
			wantErr: `function "fn": spec.sourcePath "nope": ` + filepath.Join(dir, "nope") + " does not exist"},
		{name: "both", spec: "  handler: m.h\n  sourcePath: src\n  source:\n    m.py: x\n",
			wantErr: `function "fn": set spec.source or spec.sourcePath, not both`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := function(t, tt.spec)
			err := Pack(obj, manifest)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, obj.Object["spec"]); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

// Only Functions are packed; stdin's manifests resolve against the working directory.
func TestPackOthersAndStdin(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"}, "spec": map[string]any{"sourcePath": "nowhere"}}}
	if err := Pack(cm, "x.yaml"); err != nil || cm.Object["spec"].(map[string]any)["sourcePath"] != "nowhere" {
		t.Fatalf("a ConfigMap was touched: %v %v", err, cm.Object)
	}
	dir := tree(t, map[string]string{"h.py": "def h(e):\n    return e\n"})
	t.Chdir(dir)
	obj := function(t, "  handler: h.h\n  sourcePath: h.py\n")
	if err := Pack(obj, "STDIN"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "source"); got["h.py"] != "def h(e):\n    return e\n" {
		t.Fatalf("source %v", got)
	}
}

func TestPackRefuses(t *testing.T) {
	big := strings.Repeat("x", MaxBytes/2)
	tests := []struct {
		name    string
		files   map[string]string
		spec    string
		wantErr []string
	}{
		{name: "binary file", files: map[string]string{"src/main.py": "ok", "src/logo.png": "\x89PNG\r\n\x1a\n\xff\xfe"},
			wantErr: []string{`function "fn": spec.sourcePath "src": `, filepath.Join("src", "logo.png") + " is not UTF-8 text"}},
		{name: "one file too large", files: map[string]string{"src/main.py": "ok", "src/data.txt": big + big + "y"},
			wantErr: []string{filepath.Join("src", "data.txt") + " is 1048577 bytes or more, over the limit of 1048576", "stored in the Function object, in etcd, hence the limit"}},
		{name: "files too large together", files: map[string]string{"src/main.py": "ok", "src/a.txt": big, "src/b.txt": big},
			wantErr: []string{"over the limit of 1048576", "in etcd, hence the limit"}},
		{name: "requirements tip it over", files: map[string]string{"src/main.py": big, "src/requirements.txt": big},
			wantErr: []string{"over the limit of 1048576"}},
		{name: "nothing to pack", files: map[string]string{"src/.hidden": "x", "src/__pycache__/a.pyc": "x"},
			wantErr: []string{"holds no source files"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t, tt.files)
			obj := function(t, "  handler: main.handle\n  sourcePath: src\n")
			err := Pack(obj, filepath.Join(dir, "fn.yaml"))
			if err == nil {
				t.Fatal("packed")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("err = %q, want it to contain %q", err, want)
				}
			}
			if _, found, _ := unstructured.NestedString(obj.Object, "spec", "sourcePath"); !found {
				t.Errorf("the object was changed by a refused pack")
			}
		})
	}
}

// Exactly the limit passes, as the apiserver counts it (names, contents, requirements).
func TestPackAtTheLimit(t *testing.T) {
	body := strings.Repeat("x", MaxBytes-len("main.py")-len("pillow\n"))
	dir := tree(t, map[string]string{"src/main.py": body, "src/requirements.txt": "pillow\n"})
	obj := function(t, "  handler: main.handle\n  sourcePath: src\n")
	if err := Pack(obj, filepath.Join(dir, "fn.yaml")); err != nil {
		t.Fatal(err)
	}
	obj = function(t, "  handler: main.handle\n  sourcePath: src\n  requirements: pillow==10\n")
	if err := Pack(obj, filepath.Join(dir, "fn.yaml")); err == nil || !strings.Contains(err.Error(), "1048579 bytes") {
		t.Fatalf("err = %v, want the manifest's longer requirements counted", err)
	}
}
