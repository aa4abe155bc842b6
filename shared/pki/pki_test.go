package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustCA(t *testing.T) *KeyPair {
	t.Helper()
	ca, err := NewCA("minik8s-ca", now)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func TestCA(t *testing.T) {
	ca := mustCA(t)
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid {
		t.Errorf("IsCA=%v BasicConstraintsValid=%v, want both true", c.IsCA, c.BasicConstraintsValid)
	}
	if c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Error("CA lacks KeyUsageCertSign")
	}
	if got := c.NotAfter.Sub(now); got != CAValidity {
		t.Errorf("CA validity = %v, want %v", got, CAValidity)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("CA is not self-signed: %v", err)
	}
}

func TestServingChainAndSANs(t *testing.T) {
	ca := mustCA(t)
	hosts := []string{"localhost", "127.0.0.1", "vm", "10.96.0.1", "::1", "kubernetes.default.svc", "vm"}
	srv, err := NewServing(ca, "minik8s-apiserver", hosts, now)
	if err != nil {
		t.Fatalf("NewServing: %v", err)
	}
	if diff := cmp.Diff([]string{"localhost", "vm", "kubernetes.default.svc"}, srv.Cert.DNSNames); diff != "" {
		t.Errorf("DNS SANs (-want +got):\n%s", diff)
	}
	var ips []string
	for _, ip := range srv.Cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	if diff := cmp.Diff([]string{"127.0.0.1", "10.96.0.1", "::1"}, ips); diff != "" {
		t.Errorf("IP SANs (-want +got):\n%s", diff)
	}
	if srv.Cert.IsCA {
		t.Error("serving certificate is a CA")
	}

	other := mustCA(t)
	tests := []struct {
		name    string
		ca      *x509.Certificate
		host    string
		at      time.Time
		wantErr bool
	}{
		{name: "dns name", ca: ca.Cert, host: "localhost", at: now},
		{name: "ip", ca: ca.Cert, host: "10.96.0.1", at: now},
		{name: "ipv6", ca: ca.Cert, host: "::1", at: now},
		{name: "service name", ca: ca.Cert, host: "kubernetes.default.svc", at: now},
		{name: "name not in SANs", ca: ca.Cert, host: "evil.example", at: now, wantErr: true},
		{name: "ip not in SANs", ca: ca.Cert, host: "10.0.0.9", at: now, wantErr: true},
		{name: "other CA", ca: other.Cert, host: "localhost", at: now, wantErr: true},
		{name: "expired", ca: ca.Cert, host: "localhost", at: now.Add(ServingValidity + time.Hour), wantErr: true},
		{name: "slightly behind clock", ca: ca.Cert, host: "localhost", at: now.Add(-time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.ca, srv.Cert, tt.host, tt.at)
			if (err != nil) != tt.wantErr {
				t.Errorf("Verify(%s) error = %v, wantErr %v", tt.host, err, tt.wantErr)
			}
		})
	}
}

func TestServingRejects(t *testing.T) {
	ca := mustCA(t)
	if _, err := NewServing(nil, "x", []string{"localhost"}, now); err == nil {
		t.Error("NewServing without CA succeeded")
	}
	if _, err := NewServing(ca, "x", nil, now); err == nil {
		t.Error("NewServing without hosts succeeded")
	}
}

func TestCovers(t *testing.T) {
	ca := mustCA(t)
	srv, err := NewServing(ca, "s", []string{"localhost", "127.0.0.1", "10.0.0.5"}, now)
	if err != nil {
		t.Fatalf("NewServing: %v", err)
	}
	tests := []struct {
		hosts []string
		want  bool
	}{
		{hosts: nil, want: true},
		{hosts: []string{"localhost", "10.0.0.5"}, want: true},
		{hosts: []string{"10.0.0.6"}, want: false},
		{hosts: []string{"127.0.0.1", "other"}, want: false},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.hosts, ","), func(t *testing.T) {
			if got := Covers(srv.Cert, tt.hosts); got != tt.want {
				t.Errorf("Covers(%v) = %v, want %v", tt.hosts, got, tt.want)
			}
		})
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	ca := mustCA(t)
	crt, key := filepath.Join(dir, "pki", "ca.crt"), filepath.Join(dir, "pki", "ca.key")
	if err := ca.Write(crt, key); err != nil {
		t.Fatalf("Write: %v", err)
	}
	for path, want := range map[string]os.FileMode{crt: 0o644, key: 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatalf("stat: %v", err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", filepath.Base(path), st.Mode().Perm(), want)
		}
	}
	got, err := Read(crt, key)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	if !got.Cert.Equal(ca.Cert) || !got.Key.Equal(ca.Key) {
		t.Error("read pair differs from written pair")
	}

	// A key that is not the certificate's must be refused, not silently used.
	other := mustCA(t)
	otherKey := filepath.Join(dir, "other.key")
	if err := other.Write(filepath.Join(dir, "other.crt"), otherKey); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if _, err := Read(crt, otherKey); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("Read with a foreign key: error = %v, want mismatch", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.crt"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCert(filepath.Join(dir, "junk.crt")); err == nil {
		t.Error("ReadCert accepted junk")
	}
}

// The files must serve real TLS: a Go client trusting only the CA reaches a server using the
// serving pair by IP and by name.
func TestTLSHandshake(t *testing.T) {
	ca, err := NewCA("minik8s-ca", time.Now())
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	srv, err := NewServing(ca, "apiserver", []string{"localhost", "127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatalf("NewServing: %v", err)
	}
	keyPEM, err := srv.KeyPEM()
	if err != nil {
		t.Fatalf("KeyPEM: %v", err)
	}
	pair, err := tls.X509KeyPair(srv.CertPEM(), keyPEM)
	if err != nil {
		t.Fatalf("X509KeyPair: %v", err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	ts.StartTLS()
	defer ts.Close()
	_, port, err := net.SplitHostPort(ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM())
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			resp, err := client.Get("https://" + net.JoinHostPort(host, port) + "/")
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("status = %d", resp.StatusCode)
			}
		})
	}
}

func TestLocalHosts(t *testing.T) {
	hosts := LocalHosts()
	for _, want := range []string{"localhost", "127.0.0.1"} {
		if !slices.Contains(hosts, want) {
			t.Errorf("LocalHosts() = %v, missing %s", hosts, want)
		}
	}
	if name, err := os.Hostname(); err == nil && !slices.Contains(hosts, name) {
		t.Errorf("LocalHosts() = %v, missing host name %s", hosts, name)
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		if seen[h] {
			t.Errorf("duplicate %s in %v", h, hosts)
		}
		seen[h] = true
	}
}
