package ingress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apihttpstream "k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	streamhttp "k8s.io/streaming/pkg/httpstream"

	"minik8s.io/shared/client"
)

// DeliverScript installs the configuration it reads on stdin in an nginx container: written
// next to the live file, checked by nginx -t (a configuration nginx would refuse never
// replaces a working one), renamed into place, and loaded with nginx -s reload, which is
// graceful: the master starts workers on the new configuration and the old ones finish the
// requests they have before they exit, so nothing in flight is dropped.
const DeliverScript = `set -e
new=/etc/nginx/nginx.conf.minik8s-new
cat > "$new"
nginx -t -q -c "$new"
mv -f "$new" /etc/nginx/nginx.conf
nginx -s reload`

// DeliverCommand is the command that runs DeliverScript.
var DeliverCommand = []string{"sh", "-c", DeliverScript}

// Deliverer sends a configuration to the nginx container of a pod and reloads it.
type Deliverer interface {
	Deliver(ctx context.Context, pod *corev1.Pod, container string, conf []byte) error
}

// ExecDeliverer delivers through the apiserver's pods/exec (the kubelet runs DeliverScript in
// the container with the configuration on stdin), with client-go's executors: WebSocket
// first, SPDY when the upgrade is refused, as kubectl does.
type ExecDeliverer struct {
	Config *rest.Config
	// Timeout bounds one delivery; 0 means 30 s.
	Timeout time.Duration
}

// RESTConfig is client-go's view of the connection our client uses. Streams have no overall
// timeout of their own (the delivery's context bounds it); client-go refuses a CA together
// with insecure, which our client ignores, so the CA is dropped then.
func RESTConfig(cfg *client.Config) *rest.Config {
	rc := &rest.Config{
		Host:        cfg.Server,
		BearerToken: cfg.Token,
		UserAgent:   "minik8s-controller-manager",
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cfg.Insecure,
			ServerName: cfg.TLSServerName,
		},
	}
	if !cfg.Insecure {
		rc.CAData = cfg.CAData
	}
	return rc
}

// Deliver runs DeliverCommand in the pod's container with conf on stdin.
func (d ExecDeliverer) Deliver(ctx context.Context, pod *corev1.Pod, container string, conf []byte) error {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u, err := url.Parse(strings.TrimRight(d.Config.Host, "/"))
	if err != nil {
		return fmt.Errorf("server %q: %w", d.Config.Host, err)
	}
	u.Path += "/api/v1/namespaces/" + url.PathEscape(pod.Namespace) + "/pods/" + url.PathEscape(pod.Name) + "/exec"
	q := url.Values{"container": {container}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}, "command": DeliverCommand}
	u.RawQuery = q.Encode()
	spdy, err := remotecommand.NewSPDYExecutor(d.Config, "POST", u)
	if err != nil {
		return err
	}
	ws, err := remotecommand.NewWebSocketExecutor(d.Config, "GET", u.String())
	if err != nil {
		return err
	}
	// As kubectl: SPDY only when the WebSocket upgrade itself was refused.
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return streamhttp.IsUpgradeFailure(err) || apihttpstream.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(conf), Stdout: &out, Stderr: &out})
	if err != nil {
		if msg := strings.TrimSpace(out.String()); msg != "" {
			return fmt.Errorf("deliver to pod %s/%s: %w: %s", pod.Namespace, pod.Name, err, msg)
		}
		return fmt.Errorf("deliver to pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// errNoDeliverer is returned when a controller was built without one (tests that do not run
// nginx).
var errNoDeliverer = errors.New("no deliverer configured")
