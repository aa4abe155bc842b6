package serviceaccount

import (
	"crypto/rsa"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const apiAud = DefaultIssuer

func newValidator(t *testing.T, objs *objects, now time.Time, keys ...*rsa.PublicKey) *Validator {
	t.Helper()
	v, err := NewValidator(ValidatorConfig{Keys: keys, Getter: objs, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("NewValidator: %v", err)
	}
	return v
}

func claimsFor(t *testing.T, objs *objects, bound Bound, auds ...string) Claims {
	t.Helper()
	if auds == nil {
		auds = []string{apiAud}
	}
	c, err := NewClaims(objs.sas["ns1/robot"], bound, auds, time.Hour, t0)
	if err != nil {
		t.Fatalf("NewClaims: %v", err)
	}
	return *c
}

func TestSignValidateRoundTrip(t *testing.T) {
	objs := cluster()
	key := readKey(t, "sa.key")
	tests := []struct {
		name      string
		bound     Bound
		auds      []string // the token's; the API audience when nil
		accept    []string // the caller's; the API audiences when nil
		want      *Response
		wantClaim map[string]any // the kubernetes.io claim
	}{
		{
			name: "unbound",
			want: &Response{User: User{
				Name: "system:serviceaccount:ns1:robot", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
				Extra:  map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=jti-1"}},
			}, Audiences: []string{apiAud}},
			wantClaim: map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"}},
		},
		{
			name:  "bound to a pod on a node",
			bound: Bound{Pod: objs.pods["ns1/web"], Node: objs.nodes["n1"]},
			want: &Response{User: User{
				Name: "system:serviceaccount:ns1:robot", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
				Extra: map[string][]string{
					"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
					"authentication.kubernetes.io/pod-name":      {"web"},
					"authentication.kubernetes.io/pod-uid":       {"pod-uid"},
					"authentication.kubernetes.io/node-name":     {"n1"},
					"authentication.kubernetes.io/node-uid":      {"node-uid"},
				},
			}, Audiences: []string{apiAud}},
			wantClaim: map[string]any{
				"namespace":      "ns1",
				"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
				"pod":            map[string]any{"name": "web", "uid": "pod-uid"},
				"node":           map[string]any{"name": "n1", "uid": "node-uid"},
			},
		},
		{
			name:  "bound to a pod whose node is gone",
			bound: Bound{Pod: objs.pods["ns1/orphaned"], Node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone"}}},
			want: &Response{User: User{
				Name: "system:serviceaccount:ns1:robot", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
				Extra: map[string][]string{
					"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
					"authentication.kubernetes.io/pod-name":      {"orphaned"},
					"authentication.kubernetes.io/pod-uid":       {"orphaned-uid"},
					"authentication.kubernetes.io/node-name":     {"gone"},
				},
			}, Audiences: []string{apiAud}},
			wantClaim: map[string]any{
				"namespace":      "ns1",
				"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
				"pod":            map[string]any{"name": "orphaned", "uid": "orphaned-uid"},
				"node":           map[string]any{"name": "gone"},
			},
		},
		{
			name:  "bound to a secret",
			bound: Bound{Secret: objs.secrets["ns1/creds"]},
			want: &Response{User: User{
				Name: "system:serviceaccount:ns1:robot", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
				Extra:  map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=jti-1"}},
			}, Audiences: []string{apiAud}},
			wantClaim: map[string]any{
				"namespace":      "ns1",
				"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
				"secret":         map[string]any{"name": "creds", "uid": "secret-uid"},
			},
		},
		{
			name:  "bound to a node",
			bound: Bound{Node: objs.nodes["n1"]},
			want: &Response{User: User{
				Name: "system:serviceaccount:ns1:robot", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
				Extra: map[string][]string{
					"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
					"authentication.kubernetes.io/node-name":     {"n1"},
					"authentication.kubernetes.io/node-uid":      {"node-uid"},
				},
			}, Audiences: []string{apiAud}},
			wantClaim: map[string]any{
				"namespace":      "ns1",
				"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
				"node":           map[string]any{"name": "n1", "uid": "node-uid"},
			},
		},
		{
			name:   "audiences intersected in the caller's order",
			auds:   []string{"vault", apiAud, "minio"},
			accept: []string{"minio", "other", "vault"},
			want: &Response{User: User{
				Name: "system:serviceaccount:ns1:robot", UID: "sa-uid",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
				Extra:  map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=jti-1"}},
			}, Audiences: []string{"minio", "vault"}},
			wantClaim: map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSigner(t, DefaultIssuer, key)
			tok, err := s.Issue(claimsFor(t, objs, tt.bound, tt.auds...))
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			payload := decodeSegment(t, tok, 1)
			if diff := cmp.Diff(tt.wantClaim, payload["kubernetes.io"]); diff != "" {
				t.Errorf("kubernetes.io claim (-want +got):\n%s", diff)
			}
			v := newValidator(t, objs, t0.Add(30*time.Minute), &key.PublicKey)
			got, ok, err := v.Authenticate(t.Context(), tok, tt.accept)
			if err != nil || !ok {
				t.Fatalf("Authenticate = %v, %v", ok, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Authenticate (-want +got):\n%s", diff)
			}
		})
	}
}

// The token itself must look like Kubernetes': the same header, claim names and encodings,
// since relying parties (Vault, cloud IAM) parse them.
func TestTokenFormat(t *testing.T) {
	objs := cluster()
	s := newSigner(t, DefaultIssuer, readKey(t, "sa.key"))
	tok, err := s.Issue(claimsFor(t, objs, Bound{Pod: objs.pods["ns1/web"], Node: objs.nodes["n1"]}))
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := map[string]any{"alg": "RS256", "kid": saKeyID}
	if diff := cmp.Diff(wantHeader, decodeSegment(t, tok, 0)); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	iat := float64(t0.Unix())
	wantPayload := map[string]any{
		"aud": []any{DefaultIssuer},
		"exp": iat + 3600,
		"iat": iat,
		"nbf": iat,
		"iss": DefaultIssuer,
		"jti": "jti-1",
		"sub": "system:serviceaccount:ns1:robot",
		"kubernetes.io": map[string]any{
			"namespace":      "ns1",
			"serviceaccount": map[string]any{"name": "robot", "uid": "sa-uid"},
			"pod":            map[string]any{"name": "web", "uid": "pod-uid"},
			"node":           map[string]any{"name": "n1", "uid": "node-uid"},
		},
	}
	if diff := cmp.Diff(wantPayload, decodeSegment(t, tok, 1)); diff != "" {
		t.Errorf("payload (-want +got):\n%s", diff)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	key, other := readKey(t, "sa.key"), readKey(t, "other.key")
	exp := t0.Add(time.Hour)
	type setup struct {
		objs    *objects
		signer  *Signer
		claims  Claims
		now     time.Time
		accept  []string
		mangled func(tok string) string
	}
	tests := []struct {
		name    string
		prepare func(t *testing.T, s *setup)
		wantOK  bool
		wantErr string // "" with wantOK false: not a token of ours, no error
	}{
		{name: "valid", wantOK: true},
		{name: "expired within the leeway", wantOK: true, prepare: func(t *testing.T, s *setup) { s.now = exp.Add(Leeway) }},
		{name: "expired", wantErr: "service account token has expired", prepare: func(t *testing.T, s *setup) {
			s.now = exp.Add(Leeway + time.Second)
		}},
		{name: "not yet valid", wantErr: "service account token is not valid yet", prepare: func(t *testing.T, s *setup) {
			s.now = t0.Add(-Leeway - time.Second)
		}},
		{name: "issued in the future", wantErr: "service account token is issued in the future", prepare: func(t *testing.T, s *setup) {
			s.claims.IssuedAt = t0.Add(10 * time.Minute)
		}},
		{name: "signed with another key", wantErr: "invalid signature, no keys found", prepare: func(t *testing.T, s *setup) {
			s.signer = newSigner(t, DefaultIssuer, other)
		}},
		{name: "signed with another key under our kid", wantErr: "error in cryptographic primitive", prepare: func(t *testing.T, s *setup) {
			s.signer = newSigner(t, DefaultIssuer, other)
			kid, _ := KeyID(&key.PublicKey)
			js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: &jose.JSONWebKey{Key: other, KeyID: kid}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.signer.signer = js
		}},
		{name: "payload changed after signing", wantErr: "error in cryptographic primitive", prepare: func(t *testing.T, s *setup) {
			s.mangled = func(tok string) string {
				parts := strings.Split(tok, ".")
				body, _ := base64.RawURLEncoding.DecodeString(parts[1])
				body = []byte(strings.Replace(string(body), `"name":"robot"`, `"name":"admin"`, 1))
				return parts[0] + "." + base64.RawURLEncoding.EncodeToString(body) + "." + parts[2]
			}
		}},
		{name: "alg none", prepare: func(t *testing.T, s *setup) {
			s.mangled = func(tok string) string {
				parts := strings.Split(tok, ".")
				return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
			}
		}},
		{name: "HS256 keyed with the public key", prepare: func(t *testing.T, s *setup) {
			s.mangled = func(tok string) string {
				pubPEM := readFile(t, "sa.pub")
				js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pubPEM}, nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
				jws, err := js.Sign(body)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := jws.CompactSerialize()
				return out
			}
		}},
		{name: "another issuer", prepare: func(t *testing.T, s *setup) {
			s.signer = newSigner(t, "https://elsewhere.example", key)
		}},
		{name: "not a JWT", prepare: func(t *testing.T, s *setup) {
			s.mangled = func(string) string { return "0123456789abcdef" }
		}},
		{name: "audience not the API's", wantErr: `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]`, prepare: func(t *testing.T, s *setup) {
			s.claims.Audiences = []string{"vault"}
		}},
		{name: "API token where another audience is asked for", wantErr: "is invalid for the target audiences", prepare: func(t *testing.T, s *setup) {
			s.accept = []string{"vault"}
		}},
		{name: "token without audience is the API's", wantOK: true, prepare: func(t *testing.T, s *setup) {
			s.claims.Audiences = nil
		}},
		{name: "service account deleted", wantErr: `serviceaccounts "robot" not found`, prepare: func(t *testing.T, s *setup) {
			delete(s.objs.sas, "ns1/robot")
		}},
		{name: "service account recreated", wantErr: "service account UID (sa-uid-2) does not match claim (sa-uid)", prepare: func(t *testing.T, s *setup) {
			s.objs.sas["ns1/robot"] = &corev1.ServiceAccount{ObjectMeta: meta("ns1", "robot", "sa-uid-2")}
		}},
		{name: "service account being deleted, within the leeway", wantOK: true, prepare: func(t *testing.T, s *setup) {
			s.objs.sas["ns1/robot"].DeletionTimestamp = &metav1.Time{Time: s.now.Add(-Leeway + time.Second)}
		}},
		{name: "service account deleted past the leeway", wantErr: "service account ns1/robot has been deleted", prepare: func(t *testing.T, s *setup) {
			s.objs.sas["ns1/robot"].DeletionTimestamp = &metav1.Time{Time: s.now.Add(-Leeway - time.Second)}
		}},
		{name: "pod deleted", wantErr: "service account token has been invalidated", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Pod: s.objs.pods["ns1/web"], Node: s.objs.nodes["n1"]})
			delete(s.objs.pods, "ns1/web")
		}},
		{name: "pod recreated", wantErr: "pod UID (pod-uid-2) does not match service account pod ref claim (pod-uid)", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Pod: s.objs.pods["ns1/web"]})
			s.objs.pods["ns1/web"] = &corev1.Pod{ObjectMeta: meta("ns1", "web", "pod-uid-2")}
		}},
		{name: "pod terminating within its grace period", wantOK: true, prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Pod: s.objs.pods["ns1/web"]})
			s.objs.pods["ns1/web"].DeletionTimestamp = &metav1.Time{Time: s.now.Add(30 * time.Second)}
		}},
		{name: "pod past its deletion", wantErr: "service account token has been invalidated", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Pod: s.objs.pods["ns1/web"]})
			s.objs.pods["ns1/web"].DeletionTimestamp = &metav1.Time{Time: s.now.Add(-2 * Leeway)}
		}},
		{name: "pod-bound token outlives its node", wantOK: true, prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Pod: s.objs.pods["ns1/web"], Node: s.objs.nodes["n1"]})
			delete(s.objs.nodes, "n1")
		}},
		{name: "secret deleted", wantErr: "service account token has been invalidated", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Secret: s.objs.secrets["ns1/creds"]})
			delete(s.objs.secrets, "ns1/creds")
		}},
		{name: "secret recreated", wantErr: "secret UID (secret-uid-2) does not match service account secret ref claim (secret-uid)", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Secret: s.objs.secrets["ns1/creds"]})
			s.objs.secrets["ns1/creds"] = &corev1.Secret{ObjectMeta: meta("ns1", "creds", "secret-uid-2")}
		}},
		{name: "node deleted", wantErr: "service account token has been invalidated", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Node: s.objs.nodes["n1"]})
			delete(s.objs.nodes, "n1")
		}},
		{name: "node recreated", wantErr: "node UID (node-uid-2) does not match service account node ref claim (node-uid)", prepare: func(t *testing.T, s *setup) {
			s.claims = claimsFor(t, s.objs, Bound{Node: s.objs.nodes["n1"]})
			s.objs.nodes["n1"] = &corev1.Node{ObjectMeta: meta("", "n1", "node-uid-2")}
		}},
		{name: "no kubernetes.io claim", wantErr: "no kubernetes.io namespace and serviceaccount claims", prepare: func(t *testing.T, s *setup) {
			s.claims.Namespace, s.claims.ServiceAccount = "", Ref{}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := cluster()
			s := &setup{objs: objs, signer: newSigner(t, DefaultIssuer, key), claims: claimsFor(t, objs, Bound{}), now: t0.Add(time.Minute)}
			if tt.prepare != nil {
				tt.prepare(t, s)
			}
			tok, err := s.signer.Issue(s.claims)
			if err != nil {
				t.Fatalf("Issue: %v", err)
			}
			if s.mangled != nil {
				tok = s.mangled(tok)
			}
			v := newValidator(t, objs, s.now, &key.PublicKey)
			resp, ok, err := v.Authenticate(t.Context(), tok, s.accept)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v (err %v)", ok, tt.wantOK, err)
			}
			if tt.wantOK != (resp != nil) {
				t.Errorf("response %+v with ok %v", resp, ok)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

// After a key rotation the old public key still verifies the tokens it signed.
func TestValidatorKeyRotation(t *testing.T) {
	objs := cluster()
	oldKey, newKey := readKey(t, "other.key"), readKey(t, "sa.key")
	v := newValidator(t, objs, t0.Add(time.Minute), &newKey.PublicKey, &oldKey.PublicKey)
	for name, key := range map[string]*rsa.PrivateKey{"old": oldKey, "new": newKey} {
		t.Run(name, func(t *testing.T) {
			tok, err := newSigner(t, DefaultIssuer, key).Issue(claimsFor(t, objs, Bound{}))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok, err := v.Authenticate(t.Context(), tok, nil); !ok || err != nil {
				t.Errorf("Authenticate = %v, %v", ok, err)
			}
		})
	}
}

func TestNewValidatorDefaults(t *testing.T) {
	key := readKey(t, "sa.key")
	tests := []struct {
		name    string
		cfg     ValidatorConfig
		want    []string
		wantErr string
	}{
		{name: "defaults", cfg: ValidatorConfig{Keys: []*rsa.PublicKey{&key.PublicKey}, Getter: cluster()}, want: []string{DefaultIssuer}},
		{name: "first issuer", cfg: ValidatorConfig{Issuers: []string{"https://a", "https://b"}, Keys: []*rsa.PublicKey{&key.PublicKey}, Getter: cluster()}, want: []string{"https://a"}},
		{name: "given", cfg: ValidatorConfig{APIAudiences: []string{"api", "other"}, Keys: []*rsa.PublicKey{&key.PublicKey}, Getter: cluster()}, want: []string{"api", "other"}},
		{name: "no keys", cfg: ValidatorConfig{Getter: cluster()}, wantErr: "no public keys"},
		{name: "no getter", cfg: ValidatorConfig{Keys: []*rsa.PublicKey{&key.PublicKey}}, wantErr: "no getter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewValidator(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, v.APIAudiences()); diff != "" {
				t.Errorf("APIAudiences (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewClaims(t *testing.T) {
	objs := cluster()
	sa := objs.sas["ns1/robot"]
	now := t0.Add(750 * time.Millisecond)
	tests := []struct {
		name    string
		bound   Bound
		want    *Claims
		wantErr string
	}{
		{
			name:  "pod with node",
			bound: Bound{Pod: objs.pods["ns1/web"], Node: objs.nodes["n1"]},
			want: &Claims{Namespace: "ns1", ServiceAccount: Ref{Name: "robot", UID: "sa-uid"},
				Pod: &Ref{Name: "web", UID: "pod-uid"}, Node: &Ref{Name: "n1", UID: "node-uid"},
				Audiences: []string{"a"}, IssuedAt: t0, NotBefore: t0, Expiry: t0.Add(time.Hour)},
		},
		{name: "secret and pod", bound: Bound{Pod: objs.pods["ns1/web"], Secret: objs.secrets["ns1/creds"]}, wantErr: "only be bound to one object type"},
		{name: "secret and node", bound: Bound{Node: objs.nodes["n1"], Secret: objs.secrets["ns1/creds"]}, wantErr: "only be bound to one object type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewClaims(sa, tt.bound, []string{"a"}, time.Hour, now)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("NewClaims (-want +got):\n%s", diff)
			}
		})
	}
}
