package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"time"

	"minik8s.io/shared/kubeconfig"
)

// Lifetimes. The CA outlives any dev cluster; serving certificates are shorter so a leaked key
// ages out, and the apiserver's setup reissues them from the CA when they near expiry.
const (
	CAValidity      = 10 * 365 * 24 * time.Hour
	ServingValidity = 2 * 365 * 24 * time.Hour
)

// clockSkew backdates NotBefore so a freshly made certificate is valid on a host whose clock
// runs slightly behind the one that made it.
const clockSkew = 5 * time.Minute

// KeyPair is a certificate with its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA valid from now for CAValidity.
func NewCA(commonName string, now time.Time) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// Only leaf certificates below this CA: a stolen CA-signed cert cannot mint more.
		MaxPathLenZero: true,
		SubjectKeyId:   keyID(&key.PublicKey),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// NewServing makes a TLS server certificate signed by ca for exactly the given hosts (DNS
// names or IP addresses), valid from now for ServingValidity.
func NewServing(ca *KeyPair, commonName string, hosts []string, now time.Time) (*KeyPair, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("issue serving certificate: no CA")
	}
	if len(hosts) == 0 {
		return nil, errors.New("issue serving certificate: no hosts")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate serving key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:   serial,
		Subject:        pkix.Name{CommonName: commonName},
		NotBefore:      now.Add(-clockSkew),
		NotAfter:       now.Add(ServingValidity),
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		SubjectKeyId:   keyID(&key.PublicKey),
		AuthorityKeyId: ca.Cert.SubjectKeyId,
	}
	for _, h := range dedupe(hosts) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		// A leaf outliving its CA fails verification anyway; say so at issue time instead.
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("create serving certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse serving certificate: %w", err)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// Covers reports whether cert names every host (DNS name or IP address) in hosts.
func Covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				return false
			}
			continue
		}
		if !slices.Contains(cert.DNSNames, h) {
			return false
		}
	}
	return true
}

// CertPEM encodes the certificate.
func (kp *KeyPair) CertPEM() []byte {
	return CertPEMOf(kp.Cert)
}

// KeyPEM encodes the private key as PKCS#8, the form crypto/tls and openssl both read.
func (kp *KeyPair) KeyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(kp.Key)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Write stores the pair: the certificate world-readable, the key owner-only. Both are written
// atomically, the key first, so a present certificate always has its key beside it.
func (kp *KeyPair) Write(certPath, keyPath string) error {
	keyPEM, err := kp.KeyPEM()
	if err != nil {
		return err
	}
	if err := kubeconfig.WriteFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write key: %w", err)
	}
	if err := kubeconfig.WriteFileAtomic(certPath, kp.CertPEM(), 0o644); err != nil {
		return fmt.Errorf("write certificate: %w", err)
	}
	return nil
}

// Read loads a pair written by Write and checks that the key belongs to the certificate.
func Read(certPath, keyPath string) (*KeyPair, error) {
	cert, err := ReadCert(certPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("read key: %w", err)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s does not match %s", keyPath, certPath)
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// ReadCert loads the first certificate of a PEM file.
func ReadCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}
	cert, err := ParseCert(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cert, nil
}

// ParseCert decodes the first CERTIFICATE block of PEM data.
func ParseCert(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE block in PEM data")
		}
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("parse certificate: %w", err)
			}
			return cert, nil
		}
	}
}

// ParseKey decodes an ECDSA private key in PKCS#8 or SEC 1 ("EC PRIVATE KEY") PEM.
func ParseKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block in key data")
	}
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse private key: %w", err)
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key is %T, want ECDSA", k)
		}
		return ec, nil
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse private key: %w", err)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported key PEM type %q", block.Type)
	}
}

// Verify checks that cert chains to ca for server use and names host.
func Verify(ca, cert *x509.Certificate, host string, now time.Time) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	_, err := cert.Verify(x509.VerifyOptions{
		DNSName:     host,
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("verify certificate for %s: %w", host, err)
	}
	return nil
}

func newSerial() (*big.Int, error) {
	// 128 random bits, as the CA/Browser forum asks; uniqueness matters more than order here.
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate serial number: %w", err)
	}
	return s, nil
}

// keyID is the SHA-256 of the public key truncated to 20 bytes (RFC 7093, method 1); it lets
// clients find the issuer in a bundle of CAs.
func keyID(pub *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(der)
	return sum[:20]
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// CertPEMOf encodes a certificate on its own, e.g. a CA read without its key.
func CertPEMOf(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}
