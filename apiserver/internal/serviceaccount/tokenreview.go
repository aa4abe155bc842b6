package serviceaccount

import (
	"context"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
)

// AuthenticateFunc authenticates a bearer token for a caller that accepts audiences (nil
// means the API audiences). ok false with a nil error means no authenticator knew the token.
// Validator.Authenticate is one; AudienceAgnostic adapts those that know nothing of audiences.
type AuthenticateFunc func(ctx context.Context, token string, audiences []string) (*Response, bool, error)

// AudienceAgnostic adapts an authenticator of tokens that carry no audience, such as the
// static token file, as Kubernetes does: their tokens are good for the API audiences only, so
// a caller asking for other audiences does not get them.
func AudienceAgnostic(apiAudiences []string, authenticate func(ctx context.Context, token string) (*Response, bool, error)) AuthenticateFunc {
	return func(ctx context.Context, token string, audiences []string) (*Response, bool, error) {
		if audiences == nil {
			return authenticate(ctx, token)
		}
		auds := Intersect(apiAudiences, audiences)
		if len(auds) == 0 {
			return nil, false, nil
		}
		resp, ok, err := authenticate(ctx, token)
		if resp == nil || !ok || err != nil {
			return resp, ok, err
		}
		resp.Audiences = auds
		return resp, true, nil
	}
}

// TokenReview answers POST /apis/authentication.k8s.io/v1/tokenreviews as Kubernetes does: it
// authenticates spec.token for spec.audiences (the API audiences when empty) and returns a
// copy of review with status filled in. A rejected token is not an error: status says
// authenticated false and why. Errors are *apierror.Error: 400 for a missing token, 500 when an
// authenticator answers for audiences nobody asked for.
func TokenReview(ctx context.Context, review *authnv1.TokenReview, apiAudiences []string, authenticate AuthenticateFunc) (*authnv1.TokenReview, error) {
	if review.Spec.Token == "" {
		return nil, apierror.New(apierror.ErrBadRequest, "token is required for TokenReview in authentication")
	}
	out := review.DeepCopy()
	out.TypeMeta = metav1.TypeMeta{Kind: "TokenReview", APIVersion: authnv1.SchemeGroupVersion.String()}
	out.Status = authnv1.TokenReviewStatus{}

	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = apiAudiences
	}
	resp, ok, err := authenticate(ctx, review.Spec.Token, auds)
	out.Status.Authenticated = ok
	if err != nil {
		out.Status.Error = err.Error()
	}
	if len(auds) > 0 && resp != nil && len(Intersect(auds, resp.Audiences)) == 0 {
		// An authenticator ignored the audiences it was given: better to fail than to vouch
		// for a token to a caller it was never meant for.
		return nil, apierror.New(apierror.ErrInternal, "error validating audiences")
	}
	if resp != nil {
		out.Status.User = UserInfo(resp.User)
		out.Status.Audiences = resp.Audiences
	}
	return out, nil
}

// UserInfo is the API form of a user, as TokenReview and SelfSubjectReview carry it.
func UserInfo(u User) authnv1.UserInfo {
	info := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: map[string]authnv1.ExtraValue{}}
	for k, v := range u.Extra {
		info.Extra[k] = authnv1.ExtraValue(v)
	}
	return info
}
