package serviceaccount

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readFile(t *testing.T, names ...string) []byte {
	t.Helper()
	var out []byte
	for _, n := range names {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// The expected key ids were computed with openssl, independently of this package:
// openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64url without padding.
const (
	saKeyID    = "l6RauXIgubu6UhlJzZHnf-Cotp8u87v4LE3nZzFN81c"
	otherKeyID = "xzbfpicBHluEFkg5jqdGJA_2sPhSviP4tyEx3tYwxOM"
)

func TestParsePublicKeys(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		wantKIDs []string
		wantErr  string
	}{
		{name: "PKIX public key", files: []string{"sa.pub"}, wantKIDs: []string{saKeyID}},
		{name: "certificate", files: []string{"other.crt"}, wantKIDs: []string{otherKeyID}},
		{name: "several, in order", files: []string{"other.crt", "sa.pub"}, wantKIDs: []string{otherKeyID, saKeyID}},
		{name: "private key blocks are skipped", files: []string{"sa.key", "sa.pub"}, wantKIDs: []string{saKeyID}},
		{name: "ECDSA", files: []string{"ec.pub"}, wantErr: "want RSA"},
		{name: "no public key", files: []string{"sa.key"}, wantErr: "no public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParsePublicKeys(readFile(t, tt.files...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var kids []string
			for _, k := range keys {
				kid, err := KeyID(k)
				if err != nil {
					t.Fatal(err)
				}
				kids = append(kids, kid)
			}
			if diff := cmp.Diff(tt.wantKIDs, kids); diff != "" {
				t.Errorf("key ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePrivateKey(t *testing.T) {
	tests := []struct {
		name    string
		data    []byte
		wantKID string
		wantErr string
	}{
		{name: "PKCS#1", data: readFile(t, "sa.key"), wantKID: saKeyID},
		{name: "PKCS#8", data: readFile(t, "other.key"), wantKID: otherKeyID},
		{name: "ECDSA", data: readFile(t, "ec.key"), wantErr: `unsupported key PEM type "EC PRIVATE KEY"`},
		{name: "public key", data: readFile(t, "sa.pub"), wantErr: `unsupported key PEM type "PUBLIC KEY"`},
		{name: "not PEM", data: []byte("hello"), wantErr: "no PEM block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParsePrivateKey(tt.data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if kid, _ := KeyID(&k.PublicKey); kid != tt.wantKID {
				t.Errorf("key id %s, want %s", kid, tt.wantKID)
			}
		})
	}
}

func TestSplitUsername(t *testing.T) {
	tests := []struct {
		in       string
		ns, name string
		ok       bool
	}{
		{in: "system:serviceaccount:ns1:robot", ns: "ns1", name: "robot", ok: true},
		{in: Username("kube-system", "default"), ns: "kube-system", name: "default", ok: true},
		{in: "system:serviceaccount:ns1"},
		{in: "system:serviceaccount::robot"},
		{in: "system:serviceaccount:ns1:a:b"},
		{in: "system:node:n1"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ns, name, ok := SplitUsername(tt.in)
			if ns != tt.ns || name != tt.name || ok != tt.ok {
				t.Errorf("SplitUsername(%q) = %q, %q, %v; want %q, %q, %v", tt.in, ns, name, ok, tt.ns, tt.name, tt.ok)
			}
		})
	}
}

func TestReadKeys(t *testing.T) {
	priv, err := ReadPrivateKey("testdata/sa.key")
	if err != nil {
		t.Fatalf("ReadPrivateKey: %v", err)
	}
	pubs, err := ReadPublicKeys("testdata/sa.pub", "testdata/other.crt")
	if err != nil {
		t.Fatalf("ReadPublicKeys: %v", err)
	}
	if len(pubs) != 2 || !priv.PublicKey.Equal(pubs[0]) {
		t.Errorf("ReadPublicKeys gave %d keys, first matching sa.key: %v", len(pubs), len(pubs) > 0 && priv.PublicKey.Equal(pubs[0]))
	}
	tests := []struct {
		name    string
		read    func() error
		wantErr string
	}{
		{name: "missing private key", read: func() error { _, err := ReadPrivateKey("testdata/missing.key"); return err }, wantErr: "read signing key"},
		{name: "private key file of another type", read: func() error { _, err := ReadPrivateKey("testdata/ec.key"); return err }, wantErr: "testdata/ec.key: unsupported key PEM type"},
		{name: "missing public key file", read: func() error { _, err := ReadPublicKeys("testdata/sa.pub", "testdata/missing.pub"); return err }, wantErr: "read public keys"},
		{name: "no files", read: func() error { _, err := ReadPublicKeys(); return err }, wantErr: "no public key files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.read(); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}
