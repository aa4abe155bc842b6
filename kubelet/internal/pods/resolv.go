package pods

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/pods/dns"
	"minik8s.io/kubelet/internal/pods/spec"
)

// writeResolvConf works out the pod's resolv.conf when its sandbox is made, as Kubernetes
// does, and keeps it in the pod's directory, where its containers mount it from. A pod that
// resolves as the node does gets none, and its containers keep the runtime's copy of the
// node's resolv.conf.
func (m *Manager) writeResolvConf(pod *corev1.Pod) error {
	path := m.builder.ResolvConfPath(string(pod.UID))
	cfg := dns.Config{ClusterDNS: m.cfg.ClusterDNS, ClusterDomain: m.cfg.ClusterDomain}
	if m.cfg.ResolvConf != "" {
		data, err := os.ReadFile(m.cfg.ResolvConf)
		if err != nil {
			// As Kubernetes: the pod still starts, with what the rest gives.
			m.log.Warn("reading the node's resolver configuration", "path", m.cfg.ResolvConf, "err", err)
		}
		cfg.Host = dns.Parse(data)
	}
	rc, warnings, err := dns.ForPod(pod, cfg)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		m.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "DNSConfigForming", "%s", w)
	}
	if rc == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("resolv.conf: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("resolv.conf: %w", err)
	}
	// Rewritten in place, not replaced: a running container's bind mount keeps the inode.
	if err := os.WriteFile(path, rc.Render(), 0o644); err != nil {
		return fmt.Errorf("resolv.conf: %w", err)
	}
	return nil
}

// resolvConf is the host path of the pod's resolv.conf for its containers' mounts, or "" when
// its sandbox was made without one.
func (m *Manager) resolvConf(pod *corev1.Pod) string {
	path := m.builder.ResolvConfPath(string(pod.UID))
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	return path
}

// writeHosts keeps the pod's hosts file in its directory once its IP is known, for its
// containers to mount at /etc/hosts, and returns its path ("" when it could not be written:
// the containers keep the runtime's). A pod on the node's network gets none: the runtime gives
// its containers the node's hosts file, as the kubelet does.
func (m *Manager) writeHosts(pod *corev1.Pod, podIP string) string {
	if pod.Spec.HostNetwork {
		return ""
	}
	path := m.builder.HostsPath(string(pod.UID))
	data := spec.HostsFile(pod, podIP, m.cfg.ClusterDomain)
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return path
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		m.log.Warn("writing the pod's hosts file", "pod", pod.Name, "err", err)
		return ""
	}
	// Rewritten in place, not replaced: a running container's bind mount keeps the inode.
	if err := os.WriteFile(path, data, 0o644); err != nil {
		m.log.Warn("writing the pod's hosts file", "pod", pod.Name, "err", err)
		return ""
	}
	return path
}
