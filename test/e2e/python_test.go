package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// debianPython is Debian's interpreter, which sees Debian's python3-kubernetes package
// (make up installs it); a python3 earlier on PATH may be another installation.
const debianPython = "/usr/bin/python3"

// The official Python client (Debian's python3-kubernetes) lists, watches, creates, patches
// and deletes a core and an apps kind. Its watch sends watch=True, Python's spelling.
func TestPythonClient(t *testing.T) {
	srv := sharedServer(t)
	if out, err := exec.Command(debianPython, "-c", "import kubernetes").CombinedOutput(); err != nil {
		t.Fatalf("the official Python client is needed (apt-get install python3-kubernetes; make up installs it): %v\n%s", err, out)
	}
	ns := "python-client"
	ctx, cancel := context.WithTimeout(t.Context(), 3*commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, debianPython, "testdata/python/client.py", srv.kubeconfig(), ns)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = &lockedBuffer{}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.py: %v\nstdout:\n%s\nstderr:\n%s", err, out, cmd.Stderr)
	}
	var got struct {
		Namespaces              []string
		Configmaps, Deployments pythonRun
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client.py printed %s: %v", out, err)
	}
	if !contains(got.Namespaces, ns) || !contains(got.Namespaces, "default") {
		t.Errorf("namespaces listed: %v", got.Namespaces)
	}
	check := func(kind, name string, r pythonRun, value func(map[string]any) any, want any) {
		t.Helper()
		if r.Listed != 0 || !r.CreatedUID || r.WatchAlive {
			t.Errorf("%s: listed %d before creating, created with uid %v, watch still running %v", kind, r.Listed, r.CreatedUID, r.WatchAlive)
		}
		wantEvents := [][2]string{{"ADDED", name}, {"MODIFIED", name}, {"DELETED", name}}
		if diff := cmp.Diff(wantEvents, r.Events); diff != "" {
			t.Errorf("%s watch events (-want +got):\n%s", kind, diff)
		}
		for what, obj := range map[string]map[string]any{"patch answer": r.Patched, "read after patch": r.Read} {
			if v := value(obj); v != want {
				t.Errorf("%s %s: %v, want %v", kind, what, v, want)
			}
		}
	}
	check("configmaps", "py-cm", got.Configmaps, func(o map[string]any) any {
		d, _ := o["data"].(map[string]any)
		return d["greeting"]
	}, "patched")
	check("deployments", "py-deploy", got.Deployments, func(o map[string]any) any {
		s, _ := o["spec"].(map[string]any)
		return s["replicas"]
	}, float64(3))
}

// pythonRun is what client.py saw of one kind.
type pythonRun struct {
	Listed     int
	CreatedUID bool
	Patched    map[string]any
	Read       map[string]any
	Events     [][2]string
	WatchAlive bool
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
