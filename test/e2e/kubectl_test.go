package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"
)

// commandTimeout bounds one kubectl run (watches have their own deadline).
const commandTimeout = 90 * time.Second

// kubectl is one of the two command-line clients under test.
type kubectl struct {
	name string // "real" or "ours": also the suffix of object names, so runs never collide
	path string
	env  []string
	// kubeconfig is passed as --kubeconfig to every command.
	kubeconfig string
}

// kubectls returns the real kubectl and ours, both pointed at srv. The real one gets a
// fresh HOME and KUBECACHEDIR, so a discovery cache from another run (or another server
// that had the same port) never leaks in.
func kubectls(t *testing.T, srv *apiserver) []kubectl {
	t.Helper()
	if _, err := os.Stat(realKubectl); err != nil {
		t.Fatalf("the real kubectl is needed at %s: %v", realKubectl, err)
	}
	home := t.TempDir()
	realEnv := append(os.Environ(), "HOME="+home, "KUBECACHEDIR="+filepath.Join(home, "cache"), "KUBECONFIG=")
	return []kubectl{
		{name: "real", path: realKubectl, env: realEnv, kubeconfig: srv.kubeconfig()},
		{name: "ours", path: bins.kubectl, env: append(os.Environ(), "KUBECONFIG="), kubeconfig: srv.kubeconfig()},
	}
}

// result is what one kubectl run printed.
type result struct {
	stdout, stderr string
	err            error // non-nil for a non-zero exit
}

func (r result) String() string {
	return fmt.Sprintf("exit: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// run runs kubectl with args and returns what it printed.
func (k kubectl) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := k.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s kubectl %s: no answer within %s\nstdout:\n%s\nstderr:\n%s",
			k.name, strings.Join(args, " "), commandTimeout, out.String(), errOut.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s kubectl %s: %v", k.name, strings.Join(args, " "), err)
	}
	return result{stdout: out.String(), stderr: errOut.String(), err: err}
}

func (k kubectl) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.path, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Env = k.env
	return cmd
}

// ok runs kubectl and fails the test unless it exits 0.
func (k kubectl) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := k.run(t, args...)
	if r.err != nil {
		t.Fatalf("%s kubectl %s failed:\n%s", k.name, strings.Join(args, " "), r)
	}
	return r
}

// manifest is the data a testdata template is rendered with.
type manifest struct {
	Suffix string // kubectl name, keeps the two runs' objects apart
	NS     string // namespace of namespaced objects
	Rev    string // bumped to change the object between applies
}

// render fills testdata/<file> and writes it to a fresh file in dir.
func render(t *testing.T, dir, file string, m manifest) string {
	t.Helper()
	tpl, err := template.ParseFiles(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tpl.Option("missingkey=error").Execute(&b, m); err != nil {
		t.Fatalf("render %s: %v", file, err)
	}
	out := filepath.Join(dir, strings.TrimSuffix(file, ".yaml")+"-"+m.Suffix+"-"+m.Rev+".yaml")
	if err := os.WriteFile(out, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// createNamespace creates ns with the real kubectl from a manifest: `kubectl create
// namespace` would send protobuf, which the apiserver does not accept (reported).
func createNamespace(t *testing.T, k kubectl, ns string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "ns.yaml")
	body := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	k.ok(t, "create", "-f", path)
}

// lockedBuffer is an io.Writer a running process writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// yamlFile decodes one YAML document into generic JSON values.
func yamlFile(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
