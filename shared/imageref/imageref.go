// Package imageref reads container image references the way Kubernetes does, for the
// apiserver's defaulting and the kubelet alike.
package imageref

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PullPolicy is Kubernetes' default pull policy for image: an image that names no tag, or the
// moving "latest" tag, is pulled every time; a pinned tag or digest only when missing.
func PullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:] // a registry's ":port" is not a tag
	}
	i := strings.LastIndex(name, ":")
	if i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}
