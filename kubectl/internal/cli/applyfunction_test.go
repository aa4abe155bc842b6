package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// apply and create send a Function's sourcePath as spec.source, read relative to the manifest,
// in a folder given to -f too; a source that cannot be packed is refused, naming the file,
// and the other objects still go.
func TestApplyPacksFunctionSource(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"fns/add.yaml":             "apiVersion: serverless.minik8s.io/v1\nkind: Function\nmetadata: {name: add}\nspec:\n  handler: main.handle\n  sourcePath: add\n",
		"fns/add/main.py":          "def handle(e):\n    return e['a'] + e['b']\n",
		"fns/add/requirements.txt": "numpy\n",
		"fns/bad.yaml":             "apiVersion: serverless.minik8s.io/v1\nkind: Function\nmetadata: {name: bad}\nspec:\n  handler: main.handle\n  sourcePath: bad\n",
		"fns/bad/main.py":          "ok",
		"fns/bad/blob.bin":         "\xff\xfe\x00",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, p, body)
	}
	base := "/apis/serverless.minik8s.io/v1/namespaces/default/functions"
	var posted []map[string]any
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"POST " + base: func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			var obj map[string]any
			if err := json.Unmarshal(b, &obj); err != nil {
				t.Error(err)
			}
			posted = append(posted, obj)
			jsonReply(string(b))(w, r)
		},
	}}
	for _, verb := range []string{"apply", "create"} {
		t.Run(verb, func(t *testing.T) {
			posted = nil
			out, errOut, code := run(t, f, "", verb, "-f", filepath.Join(dir, "fns"))
			if code != 1 || out != "function.serverless.minik8s.io/add created\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			wantErr := `error: function "bad": spec.sourcePath "bad": ` + filepath.Join(dir, "fns", "bad", "blob.bin") + " is not UTF-8 text"
			if !strings.HasPrefix(errOut, wantErr) {
				t.Errorf("stderr %q, want %q", errOut, wantErr)
			}
			if len(posted) != 1 {
				t.Fatalf("posted %d objects", len(posted))
			}
			spec := posted[0]["spec"].(map[string]any)
			want := map[string]any{
				"handler":      "main.handle",
				"source":       map[string]any{"main.py": "def handle(e):\n    return e['a'] + e['b']\n"},
				"requirements": "numpy\n",
			}
			if diff := cmp.Diff(want, spec); diff != "" {
				t.Errorf("spec sent (-want +got):\n%s", diff)
			}
		})
	}
}
