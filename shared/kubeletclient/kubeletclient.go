package kubeletclient

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// URL is the HTTPS endpoint of a node's kubelet: its first InternalIP (else ExternalIP, else
// host name) and the port it reports in status.daemonEndpoints.
func URL(n *corev1.Node) (*url.URL, error) {
	host := ""
	for _, want := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == want && host == "" {
				host = a.Address
			}
		}
	}
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port == 0 {
		return nil, fmt.Errorf("node %s does not report a kubelet address", n.Name)
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(int(port)))}, nil
}

// NewHTTP is an HTTP client for kubelets whose dials and TLS handshakes are bounded by
// timeout; requests themselves are not (streams and image uploads take long).
func NewHTTP(timeout time.Duration) *http.Client {
	return &http.Client{Transport: &http.Transport{
		// The kubelet's serving certificate is self-signed; the token is still checked.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // see above
		TLSHandshakeTimeout: timeout,
		DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
		MaxIdleConnsPerHost: 4,
	}}
}

// Ready reports whether a node's Ready condition is True.
func Ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
