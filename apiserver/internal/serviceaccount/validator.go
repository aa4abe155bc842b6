package serviceaccount

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Leeway is the clock skew tolerated on exp, nbf and iat, and how long after its deletion
// timestamp a bound object still backs its tokens: go-jose's default, which Kubernetes uses.
const Leeway = jwt.DefaultLeeway

// Getter finds the objects a token refers to. The apiserver backs it with its informers for
// validation and its registry for TokenRequest. A missing object is an error matching
// apierror.ErrNotFound.
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// ValidatorConfig says which tokens a Validator accepts.
type ValidatorConfig struct {
	// Issuers are the accepted iss values; [DefaultIssuer] when empty.
	Issuers []string
	// Keys verify signatures; a token's kid picks among them.
	Keys []*rsa.PublicKey
	// APIAudiences are the audiences of the API itself: a token must share one with the
	// caller's audiences, which default to these. [Issuers[0]] when empty, as Kubernetes
	// defaults --api-audiences to the first --service-account-issuer.
	APIAudiences []string
	Getter       Getter
	// Now is time.Now when nil.
	Now func() time.Time
}

// Validator authenticates ServiceAccount tokens.
type Validator struct {
	issuers      map[string]bool
	keys         map[string][]*rsa.PublicKey // by kid; "" holds them all
	apiAudiences []string
	getter       Getter
	now          func() time.Time
}

// NewValidator checks the configuration and fills in its defaults.
func NewValidator(cfg ValidatorConfig) (*Validator, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("serviceaccount: no public keys to verify tokens with")
	}
	if cfg.Getter == nil {
		return nil, errors.New("serviceaccount: no getter for the objects tokens refer to")
	}
	if len(cfg.Issuers) == 0 {
		cfg.Issuers = []string{DefaultIssuer}
	}
	if len(cfg.APIAudiences) == 0 {
		cfg.APIAudiences = []string{cfg.Issuers[0]}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	v := &Validator{
		issuers:      map[string]bool{},
		keys:         map[string][]*rsa.PublicKey{},
		apiAudiences: cfg.APIAudiences,
		getter:       cfg.Getter,
		now:          cfg.Now,
	}
	for _, iss := range cfg.Issuers {
		v.issuers[iss] = true
	}
	for _, k := range cfg.Keys {
		kid, err := KeyID(k)
		if err != nil {
			return nil, fmt.Errorf("serviceaccount: %w", err)
		}
		v.keys[kid] = append(v.keys[kid], k)
		v.keys[""] = append(v.keys[""], k)
	}
	return v, nil
}

// APIAudiences are the audiences tokens are checked against when the caller names none.
func (v *Validator) APIAudiences() []string { return v.apiAudiences }

// Authenticate checks token for a caller that accepts audiences (nil: the API audiences).
// ok is false with a nil error when the token is not a JWT from one of our issuers, so the
// caller can try other authenticators; an error means it is ours and is rejected. Error texts
// are for logs: the API answers 401 Unauthorized whatever they say.
func (v *Validator) Authenticate(ctx context.Context, token string, audiences []string) (*Response, bool, error) {
	if !v.ours(token) {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		// Not something we signed (alg none or HS256 land here): not ours to judge.
		return nil, false, nil
	}
	var kid string
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	keys := v.keys[kid]
	if len(keys) == 0 {
		return nil, false, errors.New("invalid signature, no keys found")
	}
	var public jwt.Claims
	var private struct {
		Kubernetes kubernetesClaim `json:"kubernetes.io"`
	}
	var errs []error
	verified := false
	for _, k := range keys {
		if err := tok.Claims(k, &public, &private); err != nil {
			errs = append(errs, err)
			continue
		}
		verified = true
		break
	}
	if !verified {
		return nil, false, errors.Join(errs...)
	}
	// ours looked at the unverified payload; now it is signed, check again.
	if !v.issuers[public.Issuer] {
		return nil, false, fmt.Errorf("token issuer %q is invalid", public.Issuer)
	}

	tokenAuds := []string(public.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = v.apiAudiences
	}
	if audiences == nil {
		audiences = v.apiAudiences
	}
	auds := Intersect(audiences, tokenAuds)
	if len(auds) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, audiences)
	}

	now := v.now()
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: now}, Leeway); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, false, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, false, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, false, errors.New("service account token is issued in the future")
	case err != nil:
		return nil, false, fmt.Errorf("service account token claims could not be validated: %w", err)
	}

	k := private.Kubernetes
	c := &Claims{
		Namespace:      k.Namespace,
		ServiceAccount: k.ServiceAccount,
		Pod:            k.Pod,
		Secret:         k.Secret,
		Node:           k.Node,
		Audiences:      public.Audience,
		ID:             public.ID,
	}
	if c.Namespace == "" || c.ServiceAccount.Name == "" {
		return nil, false, errors.New("service account token has no kubernetes.io namespace and serviceaccount claims")
	}
	if err := v.live(ctx, c, now.Add(-Leeway)); err != nil {
		return nil, false, err
	}
	return &Response{User: userFor(c), Audiences: auds}, true, nil
}

// live checks that what the token is bound to still exists as the same object: a token dies
// with its ServiceAccount, and with its pod, secret or node. Objects deleted gracefully stay
// valid until their deletion timestamp plus the leeway, so a terminating pod keeps working.
func (v *Validator) live(ctx context.Context, c *Claims, deletedBefore time.Time) error {
	ns, sa := c.Namespace, c.ServiceAccount
	acct, err := v.getter.GetServiceAccount(ctx, ns, sa.Name)
	if err != nil {
		return fmt.Errorf("get service account %s/%s: %w", ns, sa.Name, err)
	}
	if string(acct.UID) != sa.UID {
		return fmt.Errorf("service account UID (%s) does not match claim (%s)", acct.UID, sa.UID)
	}
	if gone(acct.DeletionTimestamp, deletedBefore) {
		return fmt.Errorf("service account %s/%s has been deleted", ns, sa.Name)
	}
	invalidated := errors.New("service account token has been invalidated")

	if ref := c.Secret; ref != nil {
		secret, err := v.getter.GetSecret(ctx, ns, ref.Name)
		if err != nil {
			return fmt.Errorf("%w: bound secret %s/%s: %w", invalidated, ns, ref.Name, err)
		}
		if string(secret.UID) != ref.UID {
			return fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, ref.UID)
		}
		if gone(secret.DeletionTimestamp, deletedBefore) {
			return fmt.Errorf("%w: bound secret %s/%s is being deleted", invalidated, ns, ref.Name)
		}
	}

	if ref := c.Pod; ref != nil {
		pod, err := v.getter.GetPod(ctx, ns, ref.Name)
		if err != nil {
			return fmt.Errorf("%w: bound pod %s/%s: %w", invalidated, ns, ref.Name, err)
		}
		if string(pod.UID) != ref.UID {
			return fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, ref.UID)
		}
		if gone(pod.DeletionTimestamp, deletedBefore) {
			return fmt.Errorf("%w: bound pod %s/%s is being deleted", invalidated, ns, ref.Name)
		}
		// A pod-bound token names its node for information; the pod's liveness is what counts.
		return nil
	}

	if ref := c.Node; ref != nil {
		node, err := v.getter.GetNode(ctx, ref.Name)
		if err != nil {
			return fmt.Errorf("%w: bound node %s: %w", invalidated, ref.Name, err)
		}
		if string(node.UID) != ref.UID {
			return fmt.Errorf("node UID (%s) does not match service account node ref claim (%s)", node.UID, ref.UID)
		}
		if gone(node.DeletionTimestamp, deletedBefore) {
			return fmt.Errorf("%w: bound node %s is being deleted", invalidated, ref.Name)
		}
	}
	return nil
}

func gone(deletion *metav1.Time, before time.Time) bool {
	return deletion != nil && deletion.Time.Before(before)
}

// ours reports whether token looks like a JWT whose unverified iss is one we accept, so other
// bearer tokens pass to the next authenticator without an error.
func (v *Validator) ours(token string) bool {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(body, &claims); err != nil {
		return false
	}
	return v.issuers[claims.Issuer]
}

// Intersect lists the audiences in both a and b, in a's order: Authenticate gives them in
// the order the caller asked for them, as Kubernetes does.
func Intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}
