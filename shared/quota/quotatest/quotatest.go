// Package quotatest writes and reads resource lists in tests the way people write them:
// name, quantity pairs in, name=quantity strings out.
package quotatest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// List is the resource list of name, quantity pairs: List("cpu", "100m", "pods", "2").
func List(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// Printed is list as name to printed quantity, what a diff of it should compare; nil for nil.
func Printed(list corev1.ResourceList) map[string]string {
	if list == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range list {
		out[string(k)] = v.String()
	}
	return out
}
