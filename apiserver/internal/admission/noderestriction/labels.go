package noderestriction

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Label keys a kubelet sets on its Node, which NodeRestriction lets it set even though they
// are under kubernetes.io.
var kubeletLabels = []string{
	corev1.LabelHostname,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType,
	corev1.LabelInstanceTypeStable,
	corev1.LabelOSStable,
	corev1.LabelArchStable,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
}

// kubeletLabelNamespaces are the prefixes (and their subdomains) a kubelet may set any label
// under: kubelet.kubernetes.io and node.kubernetes.io.
var kubeletLabelNamespaces = []string{corev1.LabelNamespaceSuffixKubelet, corev1.LabelNamespaceSuffixNode}

// isKubeletLabel reports whether a kubelet may set the label on its own Node.
func isKubeletLabel(key string) bool {
	if slices.Contains(kubeletLabels, key) {
		return true
	}
	ns := labelNamespace(key)
	for _, allowed := range kubeletLabelNamespaces {
		if ns == allowed || strings.HasSuffix(ns, "."+allowed) {
			return true
		}
	}
	return false
}

// isKubernetesLabel reports whether a label is under kubernetes.io or k8s.io (or a
// subdomain of either).
func isKubernetesLabel(key string) bool {
	ns := labelNamespace(key)
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") ||
		ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

func labelNamespace(key string) string {
	if prefix, _, ok := strings.Cut(key, "/"); ok {
		return prefix
	}
	return ""
}

// modifiedLabels lists, sorted, the keys added, removed or changed between two label sets.
func modifiedLabels(a, b map[string]string) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// forbiddenLabels lists, sorted, the modified labels a node may not set: those under
// node-restriction.kubernetes.io, and those under kubernetes.io or k8s.io that are not a
// kubelet's.
func forbiddenLabels(modified []string) []string {
	var out []string
	for _, k := range modified {
		ns := labelNamespace(k)
		restricted := ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction)
		if restricted || (isKubernetesLabel(k) && !isKubeletLabel(k)) {
			out = append(out, k)
		}
	}
	return out
}
