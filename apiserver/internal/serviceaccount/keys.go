package serviceaccount

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// ParsePrivateKey decodes an RSA private key in PKCS#1 ("RSA PRIVATE KEY", as kubeadm and
// bootstrap write sa.key) or PKCS#8 ("PRIVATE KEY", as openssl genpkey writes) PEM.
func ParsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block in key data")
	}
	switch block.Type {
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse private key: %w", err)
		}
		return k, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parse private key: %w", err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key is %T, want RSA", k)
		}
		return rk, nil
	default:
		return nil, fmt.Errorf("unsupported key PEM type %q", block.Type)
	}
}

// ReadPrivateKey loads the signing key from a PEM file such as pki/sa.key.
func ReadPrivateKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	k, err := ParsePrivateKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ReadPublicKeys loads the verification keys of every PEM file, in order, such as pki/sa.pub.
func ReadPublicKeys(paths ...string) ([]*rsa.PublicKey, error) {
	var keys []*rsa.PublicKey
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read public keys: %w", err)
		}
		ks, err := ParsePublicKeys(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		keys = append(keys, ks...)
	}
	if len(keys) == 0 {
		return nil, errors.New("no public key files")
	}
	return keys, nil
}

// ParsePublicKeys decodes every RSA public key in PEM data: "PUBLIC KEY" (PKIX, sa.pub),
// "RSA PUBLIC KEY" (PKCS#1) and "CERTIFICATE" blocks, in order. Several keys let tokens signed
// before a key rotation keep verifying.
func ParsePublicKeys(data []byte) ([]*rsa.PublicKey, error) {
	var keys []*rsa.PublicKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var pub any
		var err error
		switch block.Type {
		case "PUBLIC KEY":
			pub, err = x509.ParsePKIXPublicKey(block.Bytes)
		case "RSA PUBLIC KEY":
			pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
		case "CERTIFICATE":
			var cert *x509.Certificate
			if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
				pub = cert.PublicKey
			}
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("parse %s block %d: %w", block.Type, len(keys)+1, err)
		}
		rk, ok := pub.(*rsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("public key %d is %T, want RSA", len(keys)+1, pub)
		}
		keys = append(keys, rk)
	}
	if len(keys) == 0 {
		return nil, errors.New("no public key in PEM data")
	}
	return keys, nil
}

// KeyID names a public key in token headers and the JWKS as Kubernetes does: the unpadded
// base64url SHA-256 of its PKIX DER encoding. A hash rather than the key itself, so the kid can
// never be mistaken for key material.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
