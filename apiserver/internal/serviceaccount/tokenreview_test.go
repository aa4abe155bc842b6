package serviceaccount

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

func TestTokenReview(t *testing.T) {
	key := readKey(t, "sa.key")
	objs := cluster()
	s := newSigner(t, DefaultIssuer, key)
	issue := func(auds ...string) string {
		c := claimsFor(t, objs, Bound{Pod: objs.pods["ns1/web"], Node: objs.nodes["n1"]}, auds...)
		c.ID = "jti-1"
		tok, err := s.Issue(c)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	apiToken, vaultToken := issue(), issue("vault")
	v := newValidator(t, objs, t0.Add(time.Minute), &key.PublicKey)
	expired := newValidator(t, objs, t0.Add(2*time.Hour), &key.PublicKey)
	static := AudienceAgnostic([]string{DefaultIssuer}, func(_ context.Context, token string) (*Response, bool, error) {
		if token != "static-admin" {
			return nil, false, nil
		}
		return &Response{User: User{Name: "admin", UID: "admin-uid", Groups: []string{"system:masters", AuthenticatedGroup}}}, true, nil
	})
	// The chain the apiserver builds: ServiceAccount tokens first, then the static file.
	chain := func(v *Validator) AuthenticateFunc {
		return func(ctx context.Context, token string, auds []string) (*Response, bool, error) {
			if resp, ok, err := v.Authenticate(ctx, token, auds); ok || err != nil {
				return resp, ok, err
			}
			return static(ctx, token, auds)
		}
	}
	robot := authnv1.UserInfo{
		Username: "system:serviceaccount:ns1:robot", UID: "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"},
		Extra: map[string]authnv1.ExtraValue{
			"authentication.kubernetes.io/credential-id": {"JTI=jti-1"},
			"authentication.kubernetes.io/pod-name":      {"web"},
			"authentication.kubernetes.io/pod-uid":       {"pod-uid"},
			"authentication.kubernetes.io/node-name":     {"n1"},
			"authentication.kubernetes.io/node-uid":      {"node-uid"},
		},
	}
	tests := []struct {
		name string
		auth AuthenticateFunc
		spec authnv1.TokenReviewSpec
		want authnv1.TokenReviewStatus
	}{
		{
			name: "ServiceAccount token for the API",
			auth: chain(v),
			spec: authnv1.TokenReviewSpec{Token: apiToken},
			want: authnv1.TokenReviewStatus{Authenticated: true, User: robot, Audiences: []string{DefaultIssuer}},
		},
		{
			name: "ServiceAccount token for the audience asked",
			auth: chain(v),
			spec: authnv1.TokenReviewSpec{Token: vaultToken, Audiences: []string{"other", "vault"}},
			want: authnv1.TokenReviewStatus{Authenticated: true, User: robot, Audiences: []string{"vault"}},
		},
		{
			name: "ServiceAccount token for another audience",
			auth: chain(v),
			spec: authnv1.TokenReviewSpec{Token: vaultToken},
			want: authnv1.TokenReviewStatus{Error: `token audiences ["vault"] is invalid for the target audiences ["https://kubernetes.default.svc.cluster.local"]`},
		},
		{
			name: "expired ServiceAccount token",
			auth: chain(expired),
			spec: authnv1.TokenReviewSpec{Token: apiToken},
			want: authnv1.TokenReviewStatus{Error: "service account token has expired"},
		},
		{
			name: "static token",
			auth: chain(v),
			spec: authnv1.TokenReviewSpec{Token: "static-admin"},
			want: authnv1.TokenReviewStatus{Authenticated: true, Audiences: []string{DefaultIssuer}, User: authnv1.UserInfo{
				Username: "admin", UID: "admin-uid", Groups: []string{"system:masters", "system:authenticated"}, Extra: map[string]authnv1.ExtraValue{},
			}},
		},
		{
			name: "static token for an audience it cannot have",
			auth: chain(v),
			spec: authnv1.TokenReviewSpec{Token: "static-admin", Audiences: []string{"vault"}},
			want: authnv1.TokenReviewStatus{},
		},
		{
			name: "unknown token",
			auth: chain(v),
			spec: authnv1.TokenReviewSpec{Token: "nobody-knows-me"},
			want: authnv1.TokenReviewStatus{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &authnv1.TokenReview{Spec: tt.spec, Status: authnv1.TokenReviewStatus{Authenticated: true, Error: "from the client"}}
			got, err := TokenReview(t.Context(), in, []string{DefaultIssuer}, tt.auth)
			if err != nil {
				t.Fatalf("TokenReview: %v", err)
			}
			want := &authnv1.TokenReview{
				TypeMeta: metav1.TypeMeta{Kind: "TokenReview", APIVersion: "authentication.k8s.io/v1"},
				Spec:     tt.spec,
				Status:   tt.want,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("TokenReview (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTokenReviewErrors(t *testing.T) {
	deaf := func(context.Context, string, []string) (*Response, bool, error) {
		return &Response{User: User{Name: "someone"}, Audiences: []string{"elsewhere"}}, true, nil
	}
	tests := []struct {
		name string
		spec authnv1.TokenReviewSpec
		want metav1.Status
	}{
		{name: "no token", spec: authnv1.TokenReviewSpec{}, want: metav1.Status{Code: 400, Reason: metav1.StatusReasonBadRequest, Message: "token is required for TokenReview in authentication"}},
		{name: "authenticator ignores audiences", spec: authnv1.TokenReviewSpec{Token: "x"}, want: metav1.Status{Code: 500, Reason: metav1.StatusReasonInternalError, Message: "error validating audiences"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TokenReview(t.Context(), &authnv1.TokenReview{Spec: tt.spec}, []string{DefaultIssuer}, deaf)
			var apiErr *apierror.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("TokenReview = %+v, %v; want an *apierror.Error", got, err)
			}
			st := apierror.ToStatus(err)
			if diff := cmp.Diff(tt.want, metav1.Status{Code: st.Code, Reason: st.Reason, Message: st.Message}); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}
