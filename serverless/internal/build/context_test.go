package build

import (
	"archive/tar"
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func src(files map[string]string) Source {
	return Source{Namespace: "default", Name: "add", Version: 3, Handler: "main.handler", Files: files}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     Source
		wantErr string
	}{
		{"module file", src(map[string]string{"main.py": "x"}), ""},
		{"package module", Source{Namespace: "a", Name: "b", Version: 1, Handler: "pkg.mod.run",
			Files: map[string]string{"pkg/mod/__init__.py": "", "pkg/__init__.py": ""}}, ""},
		{"module in subfolder", Source{Namespace: "a", Name: "b", Version: 1, Handler: "lib.util.go_",
			Files: map[string]string{"lib/util.py": ""}}, ""},
		{"dot slash name", src(map[string]string{"./main.py": "x"}), ""},
		{"no module", src(map[string]string{"other.py": "x"}), "no main.py nor main/__init__.py"},
		{"handler without function", Source{Namespace: "a", Name: "b", Version: 1, Handler: "main",
			Files: map[string]string{"main.py": ""}}, `handler "main" is not module.function`},
		{"handler not identifiers", Source{Namespace: "a", Name: "b", Version: 1, Handler: "my-mod.run",
			Files: map[string]string{"my-mod.py": ""}}, "is not module.function"},
		{"trailing dot", Source{Namespace: "a", Name: "b", Version: 1, Handler: "main.",
			Files: map[string]string{"main.py": ""}}, "is not module.function"},
		{"absolute path", src(map[string]string{"main.py": "", "/etc/passwd": ""}), "must be a relative path"},
		{"parent path", src(map[string]string{"main.py": "", "a/../../x": ""}), "leaves the function's folder"},
		{"no files", src(nil), "no files"},
		{"no version", Source{Namespace: "a", Name: "b", Handler: "main.h", Files: map[string]string{"main.py": ""}}, "version must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.src)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// untar returns a tar's entries: name -> contents ("<dir>" for folders), and their modes.
func untar(t *testing.T, b []byte) (map[string]string, map[string]int64) {
	t.Helper()
	files, modes := map[string]string{}, map[string]int64{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, modes
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			files[h.Name] = "<dir>"
		} else {
			files[h.Name] = string(data)
		}
		modes[h.Name] = h.Mode
		if h.ModTime.Unix() != 0 {
			t.Errorf("%s has time %v, want the epoch", h.Name, h.ModTime)
		}
	}
}

func TestContext(t *testing.T) {
	s := src(map[string]string{"main.py": "def handler(e): return e\n", "lib/words.py": "W = 1\n", "data/x.txt": "x"})
	s.Requirements = "six==1.16.0\n"
	b, err := Context("base:1", s, []string{"--index-url", "http://pypi.local/simple"})
	if err != nil {
		t.Fatal(err)
	}
	files, modes := untar(t, b)
	df := files["Dockerfile"]
	delete(files, "Dockerfile")
	want := map[string]string{
		"requirements.txt":      "six==1.16.0\n",
		"function/":             "<dir>",
		"function/main.py":      "def handler(e): return e\n",
		"function/lib/":         "<dir>",
		"function/lib/words.py": "W = 1\n",
		"function/data/":        "<dir>",
		"function/data/x.txt":   "x",
	}
	if d := cmp.Diff(want, files); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	if modes["function/main.py"] != 0o644 || modes["function/lib/"] != 0o755 {
		t.Errorf("modes: %v", modes)
	}
	for _, line := range []string{
		"FROM base:1\n",
		"RUN pip install --no-cache-dir --retries 1 --timeout 10 --index-url http://pypi.local/simple -r /opt/minik8s/requirements.txt\n",
		"USER root\n",
		"COPY --chown=10001:10001 function/ /function/\n",
		"RUN python3 -m compileall -q /function && echo main.handler > /opt/minik8s/function/handler\n",
		"USER 10001\n",
		`LABEL serverless.minik8s.io/function="add" serverless.minik8s.io/namespace="default" serverless.minik8s.io/version="3"` + "\n",
	} {
		if !strings.Contains(df, line) {
			t.Errorf("Dockerfile lacks %q:\n%s", line, df)
		}
	}
	// Requirements are installed before the source is copied, so a source change reuses the
	// layer with the installed packages.
	if strings.Index(df, "pip install") > strings.Index(df, "COPY --chown=10001:10001 function/") {
		t.Errorf("pip runs after the source is copied:\n%s", df)
	}
	again, err := Context("base:1", s, []string{"--index-url", "http://pypi.local/simple"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again) {
		t.Error("the same source gave two different contexts")
	}
}

func TestContextWithoutRequirements(t *testing.T) {
	b, err := Context(DefaultBase, src(map[string]string{"main.py": "x"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := untar(t, b)
	if _, ok := files["requirements.txt"]; ok {
		t.Error("requirements.txt in a context without requirements")
	}
	if strings.Contains(files["Dockerfile"], "pip") || strings.Contains(files["Dockerfile"], "USER") {
		t.Errorf("Dockerfile runs pip without requirements:\n%s", files["Dockerfile"])
	}
	if !strings.HasPrefix(files["Dockerfile"], "FROM minik8s/python-runtime:latest\n") {
		t.Errorf("Dockerfile:\n%s", files["Dockerfile"])
	}
}

func TestContextRefusesDuplicates(t *testing.T) {
	_, err := Context(DefaultBase, src(map[string]string{"main.py": "a", "./main.py": "b"}), nil)
	if err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("Context = %v, want a duplicate file error", err)
	}
}

func TestNames(t *testing.T) {
	if got := Image("team-a", "thumb", 12); got != "minik8s-fn/team-a.thumb:v12" {
		t.Errorf("Image = %q", got)
	}
	want := map[string]string{
		"serverless.minik8s.io/namespace": "team-a",
		"serverless.minik8s.io/function":  "thumb",
		"serverless.minik8s.io/version":   "12",
	}
	if d := cmp.Diff(want, Labels("", "team-a", "thumb", 12)); d != "" {
		t.Errorf("Labels (-want +got):\n%s", d)
	}
	want["serverless.minik8s.io/cluster"] = "minik8s-1a2b"
	if d := cmp.Diff(want, Labels("minik8s-1a2b", "team-a", "thumb", 12)); d != "" {
		t.Errorf("Labels with a cluster (-want +got):\n%s", d)
	}
}
