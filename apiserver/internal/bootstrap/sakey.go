package bootstrap

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"slices"

	"minik8s.io/apiserver/internal/serviceaccount"
	"minik8s.io/shared/kubeconfig"
)

// saKeyBits is the size of the ServiceAccount signing key; kubeadm makes the same.
const saKeyBits = 2048

// ensureSAKey makes the ServiceAccount token signing key pair when it is missing. The private
// key is the source of truth: a lost public half is derived again, but a public key without its
// private key is refused, since a new pair would invalidate every token already issued.
func (p *Paths) ensureSAKey() error {
	key, err := exists(p.SAKey)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	pub, err := exists(p.SAPub)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	switch {
	case key:
		data, err := os.ReadFile(p.SAKey)
		if err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		priv, err := serviceaccount.ParsePrivateKey(data)
		if err != nil {
			return fmt.Errorf("bootstrap: %s: %w", p.SAKey, err)
		}
		if pub {
			return p.checkSAPub(priv)
		}
		return p.writeSAPub(priv)
	case pub:
		return fmt.Errorf("bootstrap: %s exists without %s; restore the private key or remove both to make a new pair (every ServiceAccount token must then be reissued)", p.SAPub, p.SAKey)
	}
	priv, err := rsa.GenerateKey(rand.Reader, saKeyBits)
	if err != nil {
		return fmt.Errorf("bootstrap: generate ServiceAccount key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(priv)})
	if err := kubeconfig.WriteFileAtomic(p.SAKey, keyPEM, 0o600); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	p.wrote(p.SAKey)
	return p.writeSAPub(priv)
}

func (p *Paths) writeSAPub(priv *rsa.PrivateKey) error {
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return fmt.Errorf("bootstrap: encode ServiceAccount public key: %w", err)
	}
	if err := kubeconfig.WriteFileAtomic(p.SAPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	p.wrote(p.SAPub)
	return nil
}

// checkSAPub refuses a public key that does not belong to the private key: tokens would be
// signed with one and verified with the other, and every one of them would be rejected.
func (p *Paths) checkSAPub(priv *rsa.PrivateKey) error {
	data, err := os.ReadFile(p.SAPub)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	pubs, err := serviceaccount.ParsePublicKeys(data)
	if err != nil {
		return fmt.Errorf("bootstrap: %s: %w", p.SAPub, err)
	}
	// Keys after the first may be older ones kept so their tokens verify until they expire.
	if !slices.ContainsFunc(pubs, func(k *rsa.PublicKey) bool { return priv.PublicKey.Equal(k) }) {
		return fmt.Errorf("bootstrap: %s does not match %s; remove it to have it derived again", p.SAPub, p.SAKey)
	}
	return nil
}
