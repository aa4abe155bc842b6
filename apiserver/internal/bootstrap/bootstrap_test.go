package bootstrap

import (
	"crypto/rsa"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/apiserver/internal/serviceaccount"
	"minik8s.io/shared/kubeconfig"
	"minik8s.io/shared/pki"
)

// snapshot maps every regular file under dir to its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}

func TestEnsureFresh(t *testing.T) {
	home := filepath.Join(t.TempDir(), "state")
	p, err := Ensure(home, Options{Hosts: []string{"192.0.2.10", "api.example"}, Nodes: []string{"node-1", "node-2"}})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	wantFiles := []string{
		"kubeconfig",
		"kubeconfigs/controller-manager.kubeconfig", "kubeconfigs/kubeproxy.kubeconfig",
		"kubeconfigs/node-node-1.kubeconfig", "kubeconfigs/node-node-2.kubeconfig",
		"kubeconfigs/scheduler.kubeconfig", "kubeconfigs/serverless.kubeconfig",
		"pki/apiserver.crt", "pki/apiserver.key", "pki/ca.crt", "pki/ca.key",
		"pki/sa.key", "pki/sa.pub",
		"tokens.csv",
	}
	if diff := cmp.Diff(wantFiles, p.Written); diff != "" {
		t.Errorf("Written (-want +got):\n%s", diff)
	}
	var onDisk []string
	for f := range snapshot(t, home) {
		onDisk = append(onDisk, f)
	}
	slices.Sort(onDisk)
	if diff := cmp.Diff(wantFiles, onDisk); diff != "" {
		t.Errorf("files on disk (-want +got):\n%s", diff)
	}
	for _, secret := range []string{p.CAKey, p.ServingKey, p.SAKey, p.Tokens, p.AdminKubeconfig, p.Nodes["node-1"]} {
		st, err := os.Stat(secret)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", secret, st.Mode().Perm())
		}
	}

	saKey, saPub := readSAPair(t, p)
	if saKey.N.BitLen() != saKeyBits || !saKey.PublicKey.Equal(saPub) {
		t.Errorf("ServiceAccount key: %d bits, public key matches: %v", saKey.N.BitLen(), saKey.PublicKey.Equal(saPub))
	}

	ca, err := pki.ReadCert(p.CACert)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := pki.ReadCert(p.ServingCert)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "10.96.0.1", "kubernetes.default.svc", "192.0.2.10", "api.example"} {
		if err := pki.Verify(ca, srv, host, time.Now()); err != nil {
			t.Errorf("serving certificate: %v", err)
		}
	}

	ids, err := LoadTokens(p.Tokens)
	if err != nil {
		t.Fatalf("LoadTokens: %v", err)
	}
	// Each kubeconfig must carry the token of its own identity.
	wantIdentity := map[string]Identity{
		p.AdminKubeconfig:                  {User: "admin", Groups: []string{"system:masters"}},
		p.Components["scheduler"]:          {User: "system:kube-scheduler"},
		p.Components["controller-manager"]: {User: "system:kube-controller-manager"},
		p.Components["serverless"]:         {User: "system:serverless"},
		p.Components["kubeproxy"]:          {User: "system:kube-proxy"},
		p.Nodes["node-1"]:                  {User: "system:node:node-1", Groups: []string{"system:nodes"}},
		p.Nodes["node-2"]:                  {User: "system:node:node-2", Groups: []string{"system:nodes"}},
	}
	if len(ids) != len(wantIdentity) {
		t.Errorf("token file has %d identities, want %d", len(ids), len(wantIdentity))
	}
	uids := map[string]bool{}
	for path, want := range wantIdentity {
		cfg, err := kubeconfig.Load(path)
		if err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		r, err := cfg.Resolve("")
		if err != nil {
			t.Fatalf("resolve %s: %v", path, err)
		}
		if r.Server != DefaultServer || string(r.CAData) != string(pki.CertPEMOf(ca)) {
			t.Errorf("%s: server %q or CA data wrong", path, r.Server)
		}
		got, ok := ids[r.Token]
		if !ok {
			t.Errorf("%s: token not in token file", path)
			continue
		}
		if got.UID == "" || uids[got.UID] {
			t.Errorf("%s: uid %q empty or repeated", path, got.UID)
		}
		uids[got.UID] = true
		got.UID = ""
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s identity (-want +got):\n%s", path, diff)
		}
	}
}

func TestEnsureIdempotent(t *testing.T) {
	home := t.TempDir()
	opts := Options{Nodes: []string{"n1"}, Hosts: []string{"192.0.2.10"}}
	if _, err := Ensure(home, opts); err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	before := snapshot(t, home)
	p, err := Ensure(home, opts)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if len(p.Written) != 0 {
		t.Errorf("second Ensure wrote %v, want nothing", p.Written)
	}
	if diff := cmp.Diff(before, snapshot(t, home)); diff != "" {
		t.Errorf("second Ensure changed files (-before +after):\n%s", diff)
	}
}

func TestEnsureAddsWithoutReplacing(t *testing.T) {
	home := t.TempDir()
	if _, err := Ensure(home, Options{Nodes: []string{"n1"}}); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	// A hand edit must survive: new records are appended, never rewritten.
	tokens := filepath.Join(home, "tokens.csv")
	f, err := os.OpenFile(tokens, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("# added by hand\nhandtoken,alice,uid-a,\"devs\""); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := snapshot(t, home)

	p, err := Ensure(home, Options{Nodes: []string{"n1", "n2"}, Hosts: []string{"198.51.100.7"}})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	wantWritten := []string{"kubeconfigs/node-n2.kubeconfig", "pki/apiserver.crt", "pki/apiserver.key", "tokens.csv"}
	if diff := cmp.Diff(wantWritten, p.Written); diff != "" {
		t.Errorf("Written (-want +got):\n%s", diff)
	}
	after := snapshot(t, home)
	for f, content := range before {
		switch f {
		case "tokens.csv":
			if !strings.HasPrefix(after[f], content+"\n") {
				t.Errorf("tokens.csv was rewritten instead of appended:\n%s", after[f])
			}
		case "pki/apiserver.crt", "pki/apiserver.key":
			if after[f] == content {
				t.Errorf("%s not reissued for the new host", f)
			}
		default:
			if after[f] != content {
				t.Errorf("%s changed", f)
			}
		}
	}
	ids, err := LoadTokens(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if ids["handtoken"].User != "alice" {
		t.Errorf("hand-added identity lost: %+v", ids["handtoken"])
	}
	ca, _ := pki.ReadCert(p.CACert)
	srv, _ := pki.ReadCert(p.ServingCert)
	if err := pki.Verify(ca, srv, "198.51.100.7", time.Now()); err != nil {
		t.Errorf("reissued certificate: %v", err)
	}
}

func TestEnsureRenewsExpiringServingCert(t *testing.T) {
	home := t.TempDir()
	if _, err := Ensure(home, Options{}); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	later := time.Now().Add(pki.ServingValidity - 24*time.Hour)
	p, err := Ensure(home, Options{now: func() time.Time { return later }})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if diff := cmp.Diff([]string{"pki/apiserver.crt", "pki/apiserver.key"}, p.Written); diff != "" {
		t.Errorf("Written (-want +got):\n%s", diff)
	}
	srv, _ := pki.ReadCert(p.ServingCert)
	if !srv.NotAfter.After(later.Add(renewBefore)) {
		t.Errorf("renewed certificate expires %v, too soon after %v", srv.NotAfter, later)
	}
}

// A lost public key is derived again from the private key, which stays as it was, so tokens
// already issued keep verifying.
func TestEnsureDerivesLostSAPub(t *testing.T) {
	home := t.TempDir()
	p, err := Ensure(home, Options{})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	before := snapshot(t, home)
	if err := os.Remove(p.SAPub); err != nil {
		t.Fatal(err)
	}
	p, err = Ensure(home, Options{})
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	if diff := cmp.Diff([]string{"pki/sa.pub"}, p.Written); diff != "" {
		t.Errorf("Written (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, snapshot(t, home)); diff != "" {
		t.Errorf("files differ from the first Ensure (-before +after):\n%s", diff)
	}
}

func readSAPair(t *testing.T, p *Paths) (*rsa.PrivateKey, *rsa.PublicKey) {
	t.Helper()
	keyPEM, err := os.ReadFile(p.SAKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := serviceaccount.ParsePrivateKey(keyPEM)
	if err != nil {
		t.Fatalf("%s: %v", p.SAKey, err)
	}
	pubPEM, err := os.ReadFile(p.SAPub)
	if err != nil {
		t.Fatal(err)
	}
	pubs, err := serviceaccount.ParsePublicKeys(pubPEM)
	if err != nil || len(pubs) != 1 {
		t.Fatalf("%s: %d keys, %v", p.SAPub, len(pubs), err)
	}
	return key, pubs[0]
}

func TestEnsureRefuses(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, home string)
		opts    Options
		wantErr string
	}{
		{name: "bad node name", opts: Options{Nodes: []string{"Bad_Node"}}, wantErr: `node name "Bad_Node"`},
		{name: "http server", opts: Options{Server: "http://127.0.0.1:6443"}, wantErr: "not an https URL"},
		{name: "CA certificate without key", prepare: func(t *testing.T, home string) {
			if _, err := Ensure(home, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(home, "pki", "ca.key")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "only one of"},
		{name: "serving certificate from another CA", prepare: func(t *testing.T, home string) {
			if _, err := Ensure(home, Options{}); err != nil {
				t.Fatal(err)
			}
			other, err := pki.NewCA("other", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := other.Write(filepath.Join(home, "pki", "ca.crt"), filepath.Join(home, "pki", "ca.key")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "is not signed by"},
		{name: "ServiceAccount public key without private key", prepare: func(t *testing.T, home string) {
			if _, err := Ensure(home, Options{}); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(home, "pki", "sa.key")); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "sa.pub exists without"},
		{name: "ServiceAccount public key of another pair", prepare: func(t *testing.T, home string) {
			if _, err := Ensure(home, Options{}); err != nil {
				t.Fatal(err)
			}
			other := PathsFor(t.TempDir(), nil)
			if err := other.ensureSAKey(); err != nil {
				t.Fatal(err)
			}
			pub, err := os.ReadFile(other.SAPub)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "pki", "sa.pub"), pub, 0o644); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "sa.pub does not match"},
		{name: "ServiceAccount key not RSA", prepare: func(t *testing.T, home string) {
			if _, err := Ensure(home, Options{}); err != nil {
				t.Fatal(err)
			}
			ca, err := os.ReadFile(filepath.Join(home, "pki", "ca.key"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "pki", "sa.key"), ca, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "want RSA"},
		{name: "corrupt token file", prepare: func(t *testing.T, home string) {
			if err := os.WriteFile(filepath.Join(home, "tokens.csv"), []byte("only,two\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "want token,user,uid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if tt.prepare != nil {
				tt.prepare(t, home)
			}
			before := snapshot(t, home)
			_, err := Ensure(home, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Ensure error = %v, want containing %q", err, tt.wantErr)
			}
			after := snapshot(t, home)
			for f, content := range before {
				if after[f] != content {
					t.Errorf("failed Ensure changed %s", f)
				}
			}
		})
	}
}

// The admin kubeconfig must work with the real kubectl against a TLS server using the serving
// certificate: this checks the CA, the SANs and the bearer token together.
func TestRealKubectlUsesAdminKubeconfig(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed; TestEnsureFresh covers the files themselves")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	p, err := Ensure(home, Options{Server: "https://" + ln.Addr().String()})
	if err != nil {
		ln.Close()
		t.Fatalf("Ensure: %v", err)
	}
	pair, err := tls.LoadX509KeyPair(p.ServingCert, p.ServingKey)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	cfg, err := kubeconfig.Load(p.AdminKubeconfig)
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	admin, err := cfg.Resolve("")
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ts := &httptest.Server{
		Listener: ln,
		Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+admin.Token {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write([]byte("ok-from-test"))
		})},
		TLS: &tls.Config{Certificates: []tls.Certificate{pair}},
	}
	ts.StartTLS()
	defer ts.Close()
	out, err := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", p.AdminKubeconfig, "get", "--raw", "/readyz").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get --raw /readyz: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "ok-from-test" {
		t.Errorf("kubectl got %q", got)
	}
}
