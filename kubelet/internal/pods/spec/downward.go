package spec

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// volumeFieldValue is a pod field as a downwardAPI file shows it: what an env variable would
// hold, except that the whole label and annotation maps may be asked for, one key="value"
// line each in key order, as Kubernetes writes them.
func volumeFieldValue(pod *corev1.Pod, path string, env Env) (string, error) {
	switch path {
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return fieldValue(pod, path, env)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// podResourceValue is a resource of the container a downwardAPI file names.
func (b Builder) podResourceValue(pod *corev1.Pod, fs *corev1.ResourceFieldSelector) (string, error) {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == fs.ContainerName {
				return b.containerResourceValue(fs, &list[i])
			}
		}
	}
	return "", fmt.Errorf("container %s not found", fs.ContainerName)
}

// containerResourceValue is a container's request or limit in units of the selector's
// divisor, rounded up, as Kubernetes computes it. A limit the container does not set is the
// node's allocatable amount, which is what bounds it.
func (b Builder) containerResourceValue(fs *corev1.ResourceFieldSelector, c *corev1.Container) (string, error) {
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	limit := func(name corev1.ResourceName) resource.Quantity {
		if q, ok := c.Resources.Limits[name]; ok {
			return q
		}
		return b.Allocatable[name]
	}
	request := func(name corev1.ResourceName) resource.Quantity { return c.Resources.Requests[name] }
	switch fs.Resource {
	case "limits.cpu":
		return cpuString(limit(corev1.ResourceCPU), divisor), nil
	case "limits.memory":
		return bytesString(limit(corev1.ResourceMemory), divisor), nil
	case "limits.ephemeral-storage":
		return bytesString(limit(corev1.ResourceEphemeralStorage), divisor), nil
	case "requests.cpu":
		return cpuString(request(corev1.ResourceCPU), divisor), nil
	case "requests.memory":
		return bytesString(request(corev1.ResourceMemory), divisor), nil
	case "requests.ephemeral-storage":
		return bytesString(request(corev1.ResourceEphemeralStorage), divisor), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
}

// cpuString divides in millicores, so a divisor of 1m gives millicores.
func cpuString(q, divisor resource.Quantity) string {
	return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10)
}

func bytesString(q, divisor resource.Quantity) string {
	return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10)
}
