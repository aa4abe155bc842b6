package incluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// TokenFile is where ServiceAccount admission mounts the pod's token; rest.InClusterConfig
// reads the same path.
const TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// NamespaceFile names the pod's namespace, beside the token.
const NamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Round is one JSON line of the program's output.
type Round struct {
	// Time is when the round began, in unix seconds.
	Time int64 `json:"time"`
	// Pods is how many pods the list returned, -1 when it failed.
	Pods      int      `json:"pods"`
	PodNames  []string `json:"podNames"` // namespace/name, sorted
	PodsError string   `json:"podsError,omitempty"`
	// SecretsCode is the HTTP status of listing secrets in the same scope: 200 when allowed,
	// 403 when RBAC refuses, 0 when no answer came.
	SecretsCode  int    `json:"secretsCode"`
	SecretsError string `json:"secretsError,omitempty"`
	// The token file's claims as read this round: it is rewritten while the pod runs.
	TokenIat   int64  `json:"tokenIat"`
	TokenExp   int64  `json:"tokenExp"`
	TokenSub   string `json:"tokenSub"`
	TokenError string `json:"tokenError,omitempty"`
	// Env holds the KUBERNETES_* variables the kubelet set: a scratch image has no shell to
	// print them with.
	Env map[string]string `json:"env"`
}

// Claims are the token claims a Round reports.
type Claims struct {
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// ParseClaims reads a JWT's payload without checking its signature: the program reports what
// it was given, and the apiserver is the one that verifies.
func ParseClaims(token string) (Claims, error) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return Claims{}, fmt.Errorf("token has %d parts, want 3", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return Claims{}, fmt.Errorf("token payload: %w", err)
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Claims{}, fmt.Errorf("token payload: %w", err)
	}
	return c, nil
}

// Env returns the KUBERNETES_* entries of environ (KEY=VALUE strings).
func Env(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, "KUBERNETES_") {
			env[k] = v
		}
	}
	return env
}

// Prober makes rounds against the API.
type Prober struct {
	Core corev1client.CoreV1Interface
	// Namespace scopes both lists; "" lists across all namespaces.
	Namespace string
	// TokenFile is read fresh every round.
	TokenFile string
	Environ   func() []string
	Now       func() time.Time
	// Timeout bounds each call.
	Timeout time.Duration
}

// Round lists pods, tries secrets and reads the token.
func (p Prober) Round(ctx context.Context) Round {
	r := Round{Time: p.Now().Unix(), Pods: -1, Env: Env(p.Environ())}
	callCtx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	pods, err := p.Core.Pods(p.Namespace).List(callCtx, metav1.ListOptions{})
	if err != nil {
		r.PodsError = err.Error()
	} else {
		r.Pods = len(pods.Items)
		r.PodNames = make([]string, 0, len(pods.Items))
		for _, pod := range pods.Items {
			r.PodNames = append(r.PodNames, pod.Namespace+"/"+pod.Name)
		}
		slices.Sort(r.PodNames)
	}
	cancel()

	callCtx, cancel = context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	_, err = p.Core.Secrets(p.Namespace).List(callCtx, metav1.ListOptions{})
	r.SecretsCode = statusCode(err)
	if err != nil {
		r.SecretsError = err.Error()
	}

	if raw, err := os.ReadFile(p.TokenFile); err != nil {
		r.TokenError = err.Error()
	} else if c, err := ParseClaims(string(raw)); err != nil {
		r.TokenError = err.Error()
	} else {
		r.TokenIat, r.TokenExp, r.TokenSub = c.Iat, c.Exp, c.Sub
	}
	return r
}

// statusCode is the HTTP status behind a client-go call's error: 200 for none, the Status's
// code for an API error, 0 when the call got no answer.
func statusCode(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	return 0
}
