package prober

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/kubelet/internal/runtime"
)

// Execer runs a command in a container: the runtime's Exec.
type Execer interface {
	Exec(ctx context.Context, id string, cmd []string) (runtime.ExecResult, error)
}

// maxBody bounds how much of an HTTP probe's response is read, as the kubelet's 10 KiB.
const maxBody = 10 << 10

// run executes one probe attempt; it returns nil on success, an error saying why otherwise.
func (m *Manager) run(ctx context.Context, p *corev1.Probe, t Target) error {
	switch {
	case p.Exec != nil:
		res, err := m.cfg.Exec.Exec(ctx, t.ContainerID, p.Exec.Command)
		if err != nil {
			return fmt.Errorf("exec %v: %w", p.Exec.Command, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("command %v exited with %d: %s", p.Exec.Command, res.ExitCode, strings.TrimSpace(string(res.Output)))
		}
		return nil
	case p.HTTPGet != nil:
		return m.httpProbe(ctx, p.HTTPGet, t)
	case p.TCPSocket != nil:
		host, err := probeHost(p.TCPSocket.Host, t)
		if err != nil {
			return err
		}
		port, err := resolvePort(p.TCPSocket.Port, t.Container)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("dial tcp %s:%d: %w", host, port, err)
		}
		return conn.Close()
	case p.GRPC != nil:
		return fmt.Errorf("grpc probes are not supported")
	}
	return fmt.Errorf("probe has no handler")
}

// probeHost is where a network probe goes: its own host, else the pod's IP. With neither the
// probe fails rather than ask this node's own loopback.
func probeHost(host string, t Target) (string, error) {
	if host == "" {
		host = t.PodIP
	}
	if host == "" {
		return "", fmt.Errorf("the pod has no IP address yet")
	}
	return host, nil
}

func (m *Manager) httpProbe(ctx context.Context, h *corev1.HTTPGetAction, t Target) error {
	host, err := probeHost(h.Host, t)
	if err != nil {
		return err
	}
	port, err := resolvePort(h.Port, t.Container)
	if err != nil {
		return err
	}
	scheme := strings.ToLower(string(h.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := h.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	u, err = u.Parse(path)
	if err != nil {
		return fmt.Errorf("probe url: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("probe request: %w", err)
	}
	req.Header.Set("User-Agent", "minik8s-probe/1.0")
	for _, hd := range h.HTTPHeaders {
		if strings.EqualFold(hd.Name, "host") {
			req.Host = hd.Value
			continue
		}
		req.Header.Add(hd.Name, hd.Value)
	}
	resp, err := m.http.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// resolvePort turns a number or a named container port into a port number.
func resolvePort(p intstr.IntOrString, c *corev1.Container) (int, error) {
	if p.Type == intstr.Int {
		if p.IntVal <= 0 || p.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port %d", p.IntVal)
		}
		return int(p.IntVal), nil
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	if c != nil {
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				return int(cp.ContainerPort), nil
			}
		}
	}
	return 0, fmt.Errorf("port %q not found in container ports", p.StrVal)
}
