package quota

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
)

// Evaluator knows how the objects of one resource count against quotas.
type Evaluator interface {
	// GroupResource is the resource whose objects it counts.
	GroupResource() schema.GroupResource
	// ChargesUpdates reports whether an update can raise an object's usage (a claim's size, a
	// Service's type); a create always can.
	ChargesUpdates() bool
	// MatchingResources is the part of names that objects of the resource use.
	MatchingResources(names []corev1.ResourceName) []corev1.ResourceName
	// MatchesScope reports whether obj falls in the scope sel describes.
	MatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error)
	// Constraints refuses obj when a quota tracking required asks for what obj lacks.
	Constraints(required []corev1.ResourceName, obj runtime.Object) error
	// Usage is what obj charges at now.
	Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error)
}

// Ignored reports whether quotas never count gr, as Kubernetes never counts events.
func Ignored(gr schema.GroupResource) bool { return gr.Resource == "events" }

// For is the evaluator of gr: pods, Services and claims have their own; any other resource
// counts its objects.
func For(gr schema.GroupResource) Evaluator {
	if gr.Group == "" {
		switch gr.Resource {
		case "pods":
			return pods{}
		case "services":
			return services{}
		case "persistentvolumeclaims":
			return claims{}
		}
	}
	return newObjectCount(gr)
}

// ObjectCountName is the quota resource that counts the objects of gr: count/<resource> for
// the core group, count/<resource>.<group> otherwise.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// legacyCounts are the older names that count objects of a core resource, besides count/.
var legacyCounts = map[string]corev1.ResourceName{
	"configmaps":             corev1.ResourceConfigMaps,
	"resourcequotas":         corev1.ResourceQuotas,
	"replicationcontrollers": corev1.ResourceReplicationControllers,
	"secrets":                corev1.ResourceSecrets,
}

// objectCount counts the objects of a resource, whatever they hold; no scope applies to them.
type objectCount struct {
	gr    schema.GroupResource
	names []corev1.ResourceName
}

func newObjectCount(gr schema.GroupResource) objectCount {
	names := []corev1.ResourceName{ObjectCountName(gr)}
	if legacy, ok := legacyCounts[gr.Resource]; ok && gr.Group == "" {
		names = append(names, legacy)
	}
	return objectCount{gr: gr, names: names}
}

func (o objectCount) GroupResource() schema.GroupResource { return o.gr }
func (o objectCount) ChargesUpdates() bool                { return false }

func (o objectCount) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	return Intersection(names, o.names)
}

func (o objectCount) MatchesScope(corev1.ScopedResourceSelectorRequirement, runtime.Object) (bool, error) {
	return false, nil
}

func (o objectCount) Constraints([]corev1.ResourceName, runtime.Object) error { return nil }

func (o objectCount) Usage(runtime.Object, time.Time) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, n := range o.names {
		out[n] = one()
	}
	return out, nil
}

// ScopeSelectors are the scopes a quota is limited to: each of spec.scopes (as Exists) and
// each expression of spec.scopeSelector.
func ScopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// InScopes reports whether obj falls in every one of selectors.
func InScopes(e Evaluator, selectors []corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	for _, sel := range selectors {
		ok, err := e.MatchesScope(sel, obj)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// Matches reports whether q limits obj: q's status.hard has a resource obj's kind uses, and
// obj falls in q's scopes.
func Matches(q *corev1.ResourceQuota, e Evaluator, obj runtime.Object) (bool, error) {
	if len(e.MatchingResources(ResourceNames(q.Status.Hard))) == 0 {
		return false, nil
	}
	return InScopes(e, ScopeSelectors(q), obj)
}

// Usage sums what objs (the objects of e's resource in a quota's namespace) charge to a quota
// limiting hard within selectors: every resource of hard that e matches, zero when no object
// uses it.
func Usage(e Evaluator, hard []corev1.ResourceName, selectors []corev1.ScopedResourceSelectorRequirement, objs []runtime.Object, now time.Time) (corev1.ResourceList, error) {
	matched := e.MatchingResources(hard)
	used := corev1.ResourceList{}
	for _, n := range matched {
		used[n] = zero()
	}
	for _, obj := range objs {
		in, err := InScopes(e, selectors, obj)
		if err != nil {
			return nil, err
		}
		if !in {
			continue
		}
		u, err := e.Usage(obj, now)
		if err != nil {
			return nil, err
		}
		used = Add(used, u)
	}
	return Mask(used, matched), nil
}

// selectorMatches applies a scope selector's operator to the values an object holds for the
// scope (none, or one name), as Kubernetes turns it into a label requirement.
func selectorMatches(sel corev1.ScopedResourceSelectorRequirement, values ...string) (bool, error) {
	var op selection.Operator
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return false, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	req, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return false, fmt.Errorf("scope selector %s: %w", sel.ScopeName, err)
	}
	values = slices.DeleteFunc(values, func(v string) bool { return v == "" })
	if len(values) == 0 {
		return req.Matches(labels.Set{}), nil
	}
	for _, v := range values {
		if req.Matches(labels.Set{string(sel.ScopeName): v}) {
			return true, nil
		}
	}
	return false, nil
}

// isNative reports whether name is in the kubernetes.io namespace (unprefixed names are).
func isNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}
