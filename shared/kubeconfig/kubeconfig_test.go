package kubeconfig

import (
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testCA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

func TestDefaultPath(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("user home: %v", err)
	}
	sep := string(os.PathListSeparator)
	tests := []struct {
		name       string
		kubeconfig string
		minik8s    string
		want       string
	}{
		{name: "KUBECONFIG single", kubeconfig: "/a/config", minik8s: "/m", want: "/a/config"},
		{name: "KUBECONFIG list takes first non-empty", kubeconfig: sep + "/b/one" + sep + "/b/two", want: "/b/one"},
		{name: "MINIK8S_HOME", minik8s: "/srv/minik8s", want: "/srv/minik8s/kubeconfig"},
		{name: "home fallback", want: filepath.Join(home, ".minik8s", "kubeconfig")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.kubeconfig)
			t.Setenv("MINIK8S_HOME", tt.minik8s)
			if got := DefaultPath(); got != tt.want {
				t.Errorf("DefaultPath() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriteLoadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "kubeconfig")
	in := New("minik8s", "https://127.0.0.1:6443", testCA, "admin", "s3cret", "")
	if err := Write(path, in); err != nil {
		t.Fatalf("Write: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", st.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatalf("read dir: %v", err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the kubeconfig (temporary file left behind?)", len(entries))
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	// kubectl expects base64 in certificate-authority-data, never raw PEM.
	if !strings.Contains(string(raw), "certificate-authority-data: "+base64.StdEncoding.EncodeToString([]byte(testCA))) {
		t.Errorf("CA data not base64 in file:\n%s", raw)
	}

	out, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if diff := cmp.Diff(in, out, cmp.AllowUnexported(Config{}), cmp.FilterPath(func(p cmp.Path) bool {
		return p.Last().String() == ".path"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	got, err := out.Resolve("")
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	want := &Resolved{
		Context: "admin@minik8s", Cluster: "minik8s", User: "admin",
		Server: "https://127.0.0.1:6443", CAData: []byte(testCA), Token: "s3cret", Namespace: "default",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Resolve (-want +got):\n%s", diff)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), []byte(testCA), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	caB64 := base64.StdEncoding.EncodeToString([]byte(testCA))
	// Written the way kubectl and kubeadm write files, with fields minik8s ignores.
	file := `apiVersion: v1
kind: Config
preferences: {}
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority: ca.crt
- name: inline
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: ` + caB64 + `
    extensions: []
- name: insecure
  cluster:
    server: https://10.0.0.2:6443
    insecure-skip-tls-verify: true
    tls-server-name: apiserver
- name: noserver
  cluster: {}
users:
- name: alice
  user:
    token: alice-token
- name: filed
  user:
    tokenFile: token
- name: missingfile
  user:
    tokenFile: nope
contexts:
- name: a
  context: {cluster: local, user: alice, namespace: team-a}
- name: b
  context: {cluster: inline, user: filed}
- name: c
  context: {cluster: insecure, user: alice}
- name: badcluster
  context: {cluster: ghost, user: alice}
- name: baduser
  context: {cluster: local, user: ghost}
- name: badtoken
  context: {cluster: local, user: missingfile}
- name: empty
  context: {cluster: noserver, user: alice}
current-context: a
`
	path := filepath.Join(dir, "config")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	tests := []struct {
		name    string
		context string
		want    *Resolved
		wantErr string
		errIs   error
	}{
		{name: "current context, relative CA file", want: &Resolved{
			Context: "a", Cluster: "local", User: "alice", Server: "https://127.0.0.1:6443",
			CAData: []byte(testCA), Token: "alice-token", Namespace: "team-a",
		}},
		{name: "inline CA, relative token file", context: "b", want: &Resolved{
			Context: "b", Cluster: "inline", User: "filed", Server: "https://10.0.0.1:6443",
			CAData: []byte(testCA), Token: "from-file", Namespace: "default",
		}},
		{name: "insecure", context: "c", want: &Resolved{
			Context: "c", Cluster: "insecure", User: "alice", Server: "https://10.0.0.2:6443",
			Token: "alice-token", Namespace: "default", Insecure: true, TLSServerName: "apiserver",
		}},
		{name: "unknown context", context: "zzz", wantErr: `context "zzz" not found`, errIs: ErrNoContext},
		{name: "unknown cluster", context: "badcluster", wantErr: `cluster "ghost" not found`},
		{name: "unknown user", context: "baduser", wantErr: `user "ghost" not found`},
		{name: "token file missing", context: "badtoken", wantErr: "read tokenFile", errIs: os.ErrNotExist},
		{name: "cluster without server", context: "empty", wantErr: "has no server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cfg.Resolve(tt.context)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve(%q) error = %v, want containing %q", tt.context, err, tt.wantErr)
				}
				if tt.errIs != nil && !errors.Is(err, tt.errIs) {
					t.Errorf("error %v is not %v", err, tt.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.context, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve(%q) (-want +got):\n%s", tt.context, diff)
			}
		})
	}
}

func TestResolveContextChoice(t *testing.T) {
	one := New("c1", "https://h:1", "", "u", "t", "ns")
	tests := []struct {
		name    string
		cfg     func() *Config
		want    string
		wantErr bool
	}{
		{name: "current-context", cfg: func() *Config { return one }, want: "u@c1"},
		{name: "single context without current-context", cfg: func() *Config {
			c := *one
			c.CurrentContext = ""
			return &c
		}, want: "u@c1"},
		{name: "several contexts, none current", cfg: func() *Config {
			c := *one
			c.CurrentContext = ""
			c.Contexts = append(append([]NamedContext(nil), c.Contexts...), NamedContext{Name: "other", Context: Context{Cluster: "c1"}})
			return &c
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.cfg().Resolve("")
			if tt.wantErr {
				if !errors.Is(err, ErrNoContext) {
					t.Fatalf("error = %v, want ErrNoContext", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.Context != tt.want {
				t.Errorf("context = %q, want %q", r.Context, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		data string
	}{
		{name: "not yaml", data: "clusters: [unclosed"},
		{name: "wrong kind", data: "kind: Pod\napiVersion: v1\n"},
		{name: "raw PEM where base64 belongs", data: "clusters:\n- name: x\n  cluster:\n    certificate-authority-data: '-----BEGIN'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.data)); err == nil {
				t.Errorf("Parse accepted %q", tt.data)
			}
		})
	}
}

// The admin kubeconfig must work with the real kubectl; this checks that kubectl reads the
// fields where we wrote them.
func TestRealKubectlReadsFile(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed; the format is still covered by the tests above")
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := Write(path, New("minik8s", "https://127.0.0.1:6443", testCA, "admin", "s3cret", "kube-system")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", path, "config", "view", "--raw", "--minify",
		"-o", "jsonpath={.clusters[0].cluster.server} {.users[0].user.token} {.contexts[0].context.namespace} {.clusters[0].cluster.certificate-authority-data}").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl config view: %v\n%s", err, out)
	}
	want := "https://127.0.0.1:6443 s3cret kube-system " + base64.StdEncoding.EncodeToString([]byte(testCA))
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("kubectl sees %q, want %q", got, want)
	}
}
