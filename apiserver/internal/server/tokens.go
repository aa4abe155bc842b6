package server

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/serviceaccount"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// Tokens is what the server needs for ServiceAccount tokens: issuing them (TokenRequest),
// reviewing any token (TokenReview), and publishing the issuer's discovery documents.
type Tokens struct {
	Signer *serviceaccount.Signer
	// Objects reads the ServiceAccount and the object a token is bound to; the registry when
	// nil, so a token is never refused for an object a cache has not seen yet.
	Objects      serviceaccount.Getter
	APIAudiences []string
	Discovery    *serviceaccount.Discovery
	// Authenticate is the whole authenticator chain, for TokenReview.
	Authenticate serviceaccount.AuthenticateFunc
}

// Review fills a TokenReview's status.
func (t *Tokens) Review(ctx context.Context, r *authnv1.TokenReview) (*authnv1.TokenReview, error) {
	return serviceaccount.TokenReview(ctx, r, t.APIAudiences, t.Authenticate)
}

var tokenRequestGVK = authenticationGV.WithKind("TokenRequest")

// tokenRequest answers POST serviceaccounts/<name>/token with a signed token.
func (s *Server) tokenRequest(c *gin.Context, t target) {
	if s.cfg.Tokens == nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "tokens are not configured"))
		return
	}
	var req authnv1.TokenRequest
	opts, err := readAction(c, t, &req, tokenRequestGVK)
	if err != nil {
		writeError(c, err)
		return
	}
	objects := s.cfg.Tokens.Objects
	if objects == nil {
		objects = registryObjects{s.reg}
	}
	out, err := s.cfg.Tokens.Signer.TokenRequest(c.Request.Context(), objects, s.cfg.Tokens.APIAudiences, t.namespace, t.name, &req, s.cfg.Now())
	if err != nil {
		writeError(c, err)
		return
	}
	if len(opts.DryRun) > 0 {
		out.Status.Token = ""
	}
	out.TypeMeta = metav1.TypeMeta{Kind: tokenRequestGVK.Kind, APIVersion: authenticationGV.String()}
	writeJSON(c, http.StatusCreated, out)
}

// discoveryDocument serves one of the issuer's OIDC documents.
func (s *Server) discoveryDocument(jwks bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		if s.cfg.Tokens == nil || s.cfg.Tokens.Discovery == nil {
			writeError(c, apierror.New(apierror.ErrNotFound, "the server could not find the requested resource"))
			return
		}
		c.Header("Cache-Control", serviceaccount.DiscoveryCacheControl)
		if jwks {
			c.Data(http.StatusOK, serviceaccount.JWKSContentType, s.cfg.Tokens.Discovery.JWKS)
			return
		}
		c.Data(http.StatusOK, serviceaccount.ConfigContentType, s.cfg.Tokens.Discovery.Config)
	}
}

// registryObjects reads what a TokenRequest names straight from the registry.
type registryObjects struct{ r *registry.Registry }

func readAs[T runtime.Object](ctx context.Context, r *registry.Registry, plural, ns, name string) (T, error) {
	var zero T
	res, err := scheme.Lookup(plural)
	if err != nil {
		return zero, err
	}
	obj, _, err := r.Read(ctx, registry.Key{Resource: res, Namespace: ns, Name: name})
	if err != nil {
		return zero, err
	}
	return obj.(T), nil
}

func (o registryObjects) GetServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	return readAs[*corev1.ServiceAccount](ctx, o.r, "serviceaccounts", ns, name)
}

func (o registryObjects) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	return readAs[*corev1.Pod](ctx, o.r, "pods", ns, name)
}

func (o registryObjects) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	return readAs[*corev1.Secret](ctx, o.r, "secrets", ns, name)
}

func (o registryObjects) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return readAs[*corev1.Node](ctx, o.r, "nodes", "", name)
}
