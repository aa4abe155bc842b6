package client

import (
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"minik8s.io/shared/kubeconfig"
)

// Config says how to reach and authenticate to the apiserver.
type Config struct {
	// Server is the base URL, e.g. https://127.0.0.1:6443.
	Server string
	// Token is sent as "Authorization: Bearer <token>" when set.
	Token string
	// CAData is the PEM bundle that signs the server's certificate; empty means system roots.
	CAData []byte
	// TLSServerName overrides the name checked against the server's certificate.
	TLSServerName string
	// Insecure skips verification of the server's certificate.
	Insecure bool
	// Timeout bounds each non-streaming request; watches and log streams are not bounded by it.
	// Zero means 30 seconds.
	Timeout time.Duration
	// UserAgent is sent with every request; empty means "minik8s".
	UserAgent string
	// QPS, when positive, spaces requests at least 1/QPS apart so a busy controller cannot
	// flood the apiserver; Burst requests may go at once before the spacing applies.
	QPS   float64
	Burst int
	// Namespace is the default namespace of the kubeconfig context (informational: the client
	// itself always takes namespaces explicitly).
	Namespace string
	// AuthInfo is the name of the kubeconfig user the context uses (informational: kubectl
	// names it in errors about the credentials).
	AuthInfo string
	// Impersonate, when its UserName is set, sends every request as that user (the apiserver
	// checks the caller may impersonate it).
	Impersonate Impersonation
}

// Impersonation is who requests act as: kubectl's --as, --as-group and --as-uid, sent as the
// Impersonate-User, Impersonate-Group and Impersonate-Uid headers.
type Impersonation struct {
	UserName string
	UID      string
	Groups   []string
}

// FromKubeconfig builds a Config from the current context of the kubeconfig at path, or of
// the default kubeconfig (see kubeconfig.DefaultPath) when path is empty.
func FromKubeconfig(path string) (*Config, error) {
	return FromKubeconfigContext(path, "")
}

// FromKubeconfigContext is FromKubeconfig for a named context.
func FromKubeconfigContext(path, context string) (*Config, error) {
	if path == "" {
		path = kubeconfig.DefaultPath()
	}
	kc, err := kubeconfig.Load(path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	r, err := kc.Resolve(context)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return &Config{
		Server:        r.Server,
		Token:         r.Token,
		CAData:        r.CAData,
		TLSServerName: r.TLSServerName,
		Insecure:      r.Insecure,
		Namespace:     r.Namespace,
		AuthInfo:      r.User,
	}, nil
}

// setHeaders adds the impersonation headers to h; none when no user is impersonated.
func (i Impersonation) setHeaders(h http.Header) {
	if i.UserName == "" {
		return
	}
	h.Set(authenticationv1.ImpersonateUserHeader, i.UserName)
	if i.UID != "" {
		h.Set(authenticationv1.ImpersonateUIDHeader, i.UID)
	}
	for _, g := range i.Groups {
		h.Add(authenticationv1.ImpersonateGroupHeader, g)
	}
}
