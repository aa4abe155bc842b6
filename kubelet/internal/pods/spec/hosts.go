package spec

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hostsMount is where a pod's hosts file is mounted; a volumeMount of the pod's own there wins.
const hostsMount = "/etc/hosts"

// HostsPath is where the pod's hosts file is kept.
func (b Builder) HostsPath(uid string) string {
	return filepath.Join(b.PodDir(uid), "etc-hosts")
}

// HostsFile is the pod's /etc/hosts as the kubelet writes it: the loopback names, the pod's
// IP under its hostname (spec.hostname, else its name) and, with a subdomain, its fully
// qualified name <hostname>.<subdomain>.<namespace>.svc.<domain>, then spec.hostAliases.
func HostsFile(pod *corev1.Pod, podIP, clusterDomain string) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	hostname := pod.Name
	if pod.Spec.Hostname != "" {
		hostname = pod.Spec.Hostname
	}
	if podIP != "" {
		if sub := pod.Spec.Subdomain; sub != "" && clusterDomain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s.%s.svc.%s\t%s\n", podIP, hostname, sub, pod.Namespace, strings.TrimSuffix(clusterDomain, "."), hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", podIP, hostname)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}
