package quota

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Add is a + b, per resource; resources in only one of them keep its quantity.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for k, v := range a {
		out[k] = v.DeepCopy()
	}
	for k, v := range b {
		q, ok := out[k]
		if !ok {
			out[k] = v.DeepCopy()
			continue
		}
		q.Add(v)
		out[k] = q
	}
	return out
}

// SubtractNonNegative is a - b per resource, never below zero; a resource only b has is zero.
func SubtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for k, v := range a {
		q := v.DeepCopy()
		if o, ok := b[k]; ok {
			q.Sub(o)
		}
		if q.Sign() < 0 {
			q = zero()
		}
		out[k] = q
	}
	for k := range b {
		if _, ok := out[k]; !ok {
			out[k] = zero()
		}
	}
	return out
}

// Mask keeps the resources of list that names has.
func Mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := list[n]; ok {
			out[n] = q.DeepCopy()
		}
	}
	return out
}

// ResourceNames lists the resources of list, sorted.
func ResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for k := range list {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Intersection is the names of a that b has too.
func Intersection(a, b []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range a {
		if slices.Contains(b, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Equals reports whether a and b hold the same resources in the same quantities.
func Equals(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		o, ok := b[k]
		if !ok || v.Cmp(o) != 0 {
			return false
		}
	}
	return true
}

// LessThanOrEqual reports whether every resource of a that limit bounds is within it, and
// which ones exceed it.
func LessThanOrEqual(a, limit corev1.ResourceList) (bool, []corev1.ResourceName) {
	var exceeded []corev1.ResourceName
	for _, k := range ResourceNames(limit) {
		if q, ok := a[k]; ok && q.Cmp(limit[k]) > 0 {
			exceeded = append(exceeded, k)
		}
	}
	return len(exceeded) == 0, exceeded
}

// RemoveZeros drops the resources whose quantity is zero.
func RemoveZeros(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range list {
		if !v.IsZero() {
			out[k] = v
		}
	}
	return out
}

// Negative lists the resources of list below zero, sorted.
func Negative(list corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, k := range ResourceNames(list) {
		if q := list[k]; q.Sign() < 0 {
			out = append(out, k)
		}
	}
	return out
}

// String prints list as Kubernetes' quota messages do: name=quantity, sorted, comma-separated.
func String(list corev1.ResourceList) string {
	parts := make([]string, 0, len(list))
	for _, k := range ResourceNames(list) {
		q := list[k]
		parts = append(parts, string(k)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// NamesString prints resource names sorted and comma-separated.
func NamesString(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

func zero() resource.Quantity { return resource.Quantity{Format: resource.DecimalSI} }

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }
