package serviceaccount

import (
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/go-jose/go-jose/v4"
)

// Where and how the OIDC discovery documents are served, as Kubernetes serves them.
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
	// DiscoveryCacheControl lets relying parties cache both documents for an hour.
	DiscoveryCacheControl = "public, max-age=3600"
	ConfigContentType     = "application/json"
	JWKSContentType       = "application/jwk-set+json"
)

// Discovery holds the two OIDC discovery documents, rendered once: keys change only with a
// restart.
type Discovery struct {
	Config []byte // the /.well-known/openid-configuration document
	JWKS   []byte // the /openid/v1/jwks document
}

// openIDConfig is the part of the OIDC provider metadata a relying party needs to check ID
// tokens; Kubernetes serves no more.
type openIDConfig struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// NewDiscovery renders the documents for issuer and keys. jwksURI is where relying parties
// fetch the keys; when empty it is https://<externalAddress>/openid/v1/jwks, externalAddress
// being the host[:port] the API is reached at from outside.
func NewDiscovery(issuer, jwksURI, externalAddress string, keys []*rsa.PublicKey) (*Discovery, error) {
	if issuer == "" {
		return nil, errors.New("serviceaccount: empty issuer URL")
	}
	if len(keys) == 0 {
		return nil, errors.New("serviceaccount: no keys provided for validating keyset")
	}
	iss, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: issuer URL: %w", err)
	}
	// OIDC discovery requires these of an issuer.
	switch {
	case iss.Scheme != "https":
		return nil, fmt.Errorf("serviceaccount: issuer URL must use https scheme, got: %s", issuer)
	case iss.RawQuery != "":
		return nil, fmt.Errorf("serviceaccount: issuer URL may not include a query, got: %s", issuer)
	case iss.Fragment != "":
		return nil, fmt.Errorf("serviceaccount: issuer URL may not include a fragment, got: %s", issuer)
	}
	if jwksURI == "" {
		if externalAddress == "" {
			return nil, errors.New("serviceaccount: either the JWKS URI or the external address, or both, must be set")
		}
		u := url.URL{Scheme: "https", Host: externalAddress, Path: JWKSPath}
		jwksURI = u.String()
		// An address with a scheme or path would make a URL that is not what it looks like.
		if p, err := url.Parse(jwksURI); err != nil || p.Host != externalAddress || p.Path != JWKSPath {
			return nil, fmt.Errorf("serviceaccount: cannot build jwks_uri from external address %q", externalAddress)
		}
	} else if u, err := url.Parse(jwksURI); err != nil || u.Scheme != "https" {
		return nil, fmt.Errorf("serviceaccount: jwks_uri %q is not an https URL", jwksURI)
	}

	set := jose.JSONWebKeySet{}
	for i, k := range keys {
		kid, err := KeyID(k)
		if err != nil {
			return nil, fmt.Errorf("serviceaccount: key #%d: %w", i, err)
		}
		jwk := jose.JSONWebKey{Key: k, KeyID: kid, Algorithm: string(jose.RS256), Use: "sig"}
		if !jwk.Valid() || !jwk.IsPublic() {
			return nil, fmt.Errorf("serviceaccount: key #%d not valid", i)
		}
		set.Keys = append(set.Keys, jwk)
	}
	keysJSON, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encode JWKS: %w", err)
	}
	configJSON, err := json.Marshal(openIDConfig{
		Issuer:        issuer,
		JWKSURI:       jwksURI,
		ResponseTypes: []string{"id_token"},
		SubjectTypes:  []string{"public"},
		// Every key here signs RS256; Kubernetes lists the distinct algorithms of its keys.
		SigningAlgs: []string{string(jose.RS256)},
	})
	if err != nil {
		return nil, fmt.Errorf("serviceaccount: encode OIDC configuration: %w", err)
	}
	return &Discovery{Config: configJSON, JWKS: keysJSON}, nil
}
