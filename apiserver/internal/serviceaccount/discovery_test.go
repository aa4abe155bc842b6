package serviceaccount

import (
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
)

func TestDiscoveryConfig(t *testing.T) {
	keys := []*rsa.PublicKey{&readKey(t, "sa.key").PublicKey}
	tests := []struct {
		name, issuer, jwksURI, external string
		want                            map[string]any
		wantErr                         string
	}{
		{
			name: "jwks_uri from the external address", issuer: DefaultIssuer, external: "192.0.2.1:6443",
			want: map[string]any{
				"issuer":                                DefaultIssuer,
				"jwks_uri":                              "https://192.0.2.1:6443/openid/v1/jwks",
				"response_types_supported":              []any{"id_token"},
				"subject_types_supported":               []any{"public"},
				"id_token_signing_alg_values_supported": []any{"RS256"},
			},
		},
		{
			name: "jwks_uri given", issuer: "https://issuer.example/cluster", jwksURI: "https://keys.example/jwks", external: "ignored:1",
			want: map[string]any{
				"issuer":                                "https://issuer.example/cluster",
				"jwks_uri":                              "https://keys.example/jwks",
				"response_types_supported":              []any{"id_token"},
				"subject_types_supported":               []any{"public"},
				"id_token_signing_alg_values_supported": []any{"RS256"},
			},
		},
		{name: "no issuer", external: "a:1", wantErr: "empty issuer URL"},
		{name: "http issuer", issuer: "http://kubernetes.default.svc", external: "a:1", wantErr: "issuer URL must use https scheme"},
		{name: "issuer with query", issuer: "https://a/?x=1", external: "a:1", wantErr: "may not include a query"},
		{name: "issuer with fragment", issuer: "https://a/#x", external: "a:1", wantErr: "may not include a fragment"},
		{name: "nowhere for the keys", issuer: DefaultIssuer, wantErr: "either the JWKS URI or the external address"},
		{name: "external address with a scheme", issuer: DefaultIssuer, external: "https://a:1", wantErr: "cannot build jwks_uri"},
		{name: "http jwks_uri", issuer: DefaultIssuer, jwksURI: "http://keys.example/jwks", wantErr: "is not an https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewDiscovery(tt.issuer, tt.jwksURI, tt.external, keys)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(d.Config, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("configuration (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := NewDiscovery(DefaultIssuer, "", "a:1", nil); err == nil || !strings.Contains(err.Error(), "no keys") {
		t.Errorf("NewDiscovery without keys: %v", err)
	}
}

// A relying party that knows only the JWKS document can check our tokens.
func TestJWKSVerifiesTokens(t *testing.T) {
	cur, old := readKey(t, "sa.key"), readKey(t, "other.key")
	d, err := NewDiscovery(DefaultIssuer, "", "192.0.2.1:6443", []*rsa.PublicKey{&cur.PublicKey, &old.PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	var doc struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(d.JWKS, &doc); err != nil {
		t.Fatal(err)
	}
	wantKeys := []map[string]string{
		{"use": "sig", "kty": "RSA", "alg": "RS256", "kid": saKeyID, "n": b64(cur.N.Bytes()), "e": b64(big.NewInt(int64(cur.E)).Bytes())},
		{"use": "sig", "kty": "RSA", "alg": "RS256", "kid": otherKeyID, "n": b64(old.N.Bytes()), "e": b64(big.NewInt(int64(old.E)).Bytes())},
	}
	if diff := cmp.Diff(wantKeys, doc.Keys); diff != "" {
		t.Errorf("JWKS (-want +got):\n%s", diff)
	}

	var set jose.JSONWebKeySet
	if err := json.Unmarshal(d.JWKS, &set); err != nil {
		t.Fatal(err)
	}
	objs := cluster()
	for name, key := range map[string]*rsa.PrivateKey{"current key": cur, "old key": old} {
		t.Run(name, func(t *testing.T) {
			token, err := newSigner(t, DefaultIssuer, key).Issue(claimsFor(t, objs, Bound{}))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
			if err != nil {
				t.Fatal(err)
			}
			keys := set.Key(tok.Headers[0].KeyID)
			if len(keys) != 1 {
				t.Fatalf("JWKS has %d keys for kid %q", len(keys), tok.Headers[0].KeyID)
			}
			var claims jwt.Claims
			if err := tok.Claims(keys[0].Key, &claims); err != nil {
				t.Fatalf("verify with the JWKS key: %v", err)
			}
			if err := claims.Validate(jwt.Expected{Issuer: DefaultIssuer, AnyAudience: []string{DefaultIssuer}, Time: t0.Add(time.Minute)}); err != nil {
				t.Errorf("claims: %v", err)
			}
		})
	}
}
