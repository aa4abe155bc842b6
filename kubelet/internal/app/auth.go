package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/server"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/pki"
)

// reviewer checks a bearer token by asking the apiserver who it belongs to (a
// SelfSubjectReview made with the token): the kubelet has no token file of its own, and the
// apiserver is the authority.
func reviewer(base *client.Config) server.TokenReviewer {
	return func(ctx context.Context, token string) (server.Identity, bool, error) {
		cfg := *base
		cfg.Token = token
		c, err := client.New(&cfg)
		if err != nil {
			return server.Identity{}, false, err
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		review := authnv1.SelfSubjectReview{TypeMeta: metav1.TypeMeta{Kind: "SelfSubjectReview", APIVersion: "authentication.k8s.io/v1"}}
		err = c.Post().AbsPath("/apis/authentication.k8s.io/v1/selfsubjectreviews").Body(&review).Into(ctx, &review)
		switch {
		case err == nil:
			u := review.Status.UserInfo
			return server.Identity{User: u.Username, Groups: u.Groups}, true, nil
		case errors.Is(err, apierror.ErrUnauthorized):
			return server.Identity{}, false, nil
		case errors.Is(err, apierror.ErrNotFound):
			// An apiserver without SelfSubjectReviews (older than this kubelet): the token is
			// checked, whose it is stays unknown.
			if _, err := c.Get().AbsPath("/api").Do(ctx); err != nil {
				if errors.Is(err, apierror.ErrUnauthorized) {
					return server.Identity{}, false, nil
				}
				return server.Identity{}, false, err
			}
			return server.Identity{}, true, nil
		default:
			return server.Identity{}, false, err
		}
	}
}

// servingCert returns the kubelet's HTTPS certificate, self-signed and kept in the root dir.
// The apiserver does not verify it (as kube-apiserver without a kubelet CA); it reaches the
// kubelet at the addresses the Node reports, which the certificate names anyway.
func servingCert(dir, node string, hosts []string, now time.Time) (tls.Certificate, error) {
	certPath, keyPath := filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	if kp, err := pki.Read(certPath, keyPath); err == nil && pki.Covers(kp.Cert, hosts) && now.Add(24*time.Hour).Before(kp.Cert.NotAfter) {
		return tls.LoadX509KeyPair(certPath, keyPath)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	ca, err := pki.NewCA("minik8s-kubelet-"+node, now)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet certificate: %w", err)
	}
	kp, err := pki.NewServing(ca, "kubelet-"+node, hosts, now)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("kubelet certificate: %w", err)
	}
	if err := kp.Write(certPath, keyPath); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certPath, keyPath)
}
