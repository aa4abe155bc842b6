package serviceaccount

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
)

// Signer issues tokens with one private key for one issuer.
type Signer struct {
	issuer string
	keyID  string
	signer jose.Signer
	newID  func() string
}

// NewSigner signs RS256 tokens for issuer with key; the header's kid is KeyID of its public half.
func NewSigner(issuer string, key *rsa.PrivateKey) (*Signer, error) {
	if issuer == "" {
		return nil, errors.New("serviceaccount: empty issuer")
	}
	if key == nil {
		return nil, errors.New("serviceaccount: no signing key")
	}
	kid, err := KeyID(&key.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: %w", err)
	}
	// No "typ" header: Kubernetes' tokens carry alg and kid only.
	s, err := jose.NewSigner(jose.SigningKey{
		Algorithm: jose.RS256,
		Key:       &jose.JSONWebKey{Key: key, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"},
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: signer: %w", err)
	}
	return &Signer{issuer: issuer, keyID: kid, signer: s, newID: uuid.NewString}, nil
}

// Issuer is the iss of every token this Signer issues.
func (s *Signer) Issuer() string { return s.issuer }

// KeyID is the kid of every token this Signer issues.
func (s *Signer) KeyID() string { return s.keyID }

// Issue signs the claims and returns the compact JWT. An empty ID gets a random UUID, which
// Kubernetes reports as the credential id.
func (s *Signer) Issue(c Claims) (string, error) {
	if c.ID == "" {
		c.ID = s.newID()
	}
	body, err := json.Marshal(c.payload(s.issuer))
	if err != nil {
		return "", fmt.Errorf("serviceaccount: encode claims: %w", err)
	}
	jws, err := s.signer.Sign(body)
	if err != nil {
		return "", fmt.Errorf("serviceaccount: sign: %w", err)
	}
	tok, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("serviceaccount: serialize: %w", err)
	}
	return tok, nil
}
