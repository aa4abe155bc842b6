package podcache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Cache holds the desired pods of one node.
//
// Put is idempotent and never goes backwards: a pod whose resourceVersion is not newer than
// the stored one is ignored, so a late, stale bus message cannot overwrite what a relist
// already wrote. Delete of a missing pod is not an error. List returns copies, sorted by
// namespace and name.
type Cache interface {
	Put(ctx context.Context, pod *corev1.Pod) error
	Delete(ctx context.Context, namespace, name string) error
	List(ctx context.Context) ([]*corev1.Pod, error)
}

// ErrInvalidPod is returned by Put for a pod that cannot be keyed (nil, or without a name or
// namespace).
var ErrInvalidPod = errors.New("invalid pod")

// Key is the cache key of a pod: "namespace/name".
func Key(namespace, name string) string { return namespace + "/" + name }

// KeyOf checks that pod can be cached and returns its key.
func KeyOf(pod *corev1.Pod) (string, error) {
	if pod == nil {
		return "", fmt.Errorf("put nil pod: %w", ErrInvalidPod)
	}
	if pod.Name == "" || pod.Namespace == "" {
		return "", fmt.Errorf("put pod %q in namespace %q: name and namespace are required: %w", pod.Name, pod.Namespace, ErrInvalidPod)
	}
	return Key(pod.Namespace, pod.Name), nil
}

// Newer reports whether a pod at resourceVersion next should replace one stored at prev.
// resourceVersions are etcd revisions here, so two decimal numbers compare as numbers (of any
// length); anything else (a pod built locally, say) replaces the stored one only if it
// differs. The Redis adapter's Lua script implements the same rule.
func Newer(next, prev string) bool {
	if !isDecimal(next) || !isDecimal(prev) {
		return next != prev
	}
	next, prev = trimZeros(next), trimZeros(prev)
	if len(next) != len(prev) {
		return len(next) > len(prev)
	}
	return next > prev
}

func isDecimal(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func trimZeros(s string) string {
	if t := strings.TrimLeft(s, "0"); t != "" {
		return t
	}
	return "0"
}

// Sort orders pods by namespace, then name, the order List returns.
func Sort(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}
