package bootstrappolicy

import (
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Operation is the write a reconciliation calls for.
type Operation string

// Operations, as Kubernetes' RBAC reconciliation names them.
const (
	// OpNone: the stored object already holds everything wanted, or opted out.
	OpNone Operation = "none"
	// OpCreate: nothing is stored; create the wanted object.
	OpCreate Operation = "create"
	// OpUpdate: update the stored object to the result (its resourceVersion is kept, so a
	// concurrent change conflicts).
	OpUpdate Operation = "update"
	// OpRecreate: a binding's roleRef differs, and roleRef cannot change: delete the stored
	// binding (with its uid as precondition) and create the result.
	OpRecreate Operation = "recreate"
)

// ReconcileClusterRole returns what the stored ClusterRole existing (nil when there is none)
// must become to hold want, and the write that takes it there: the wanted rules it lacks
// and the wanted aggregation selectors it lacks are added; an aggregation rule want does not
// have is removed, as Kubernetes does, since the aggregation controller would otherwise
// overwrite the rules.
func ReconcileClusterRole(existing, want *rbacv1.ClusterRole) (*rbacv1.ClusterRole, Operation) {
	if existing == nil {
		return want.DeepCopy(), OpCreate
	}
	if protected(existing.Annotations) {
		return existing.DeepCopy(), OpNone
	}
	out := existing.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, &want.ObjectMeta)
	if missing := missingRules(out.Rules, want.Rules); len(missing) > 0 {
		out.Rules = append(out.Rules, missing...)
		changed = true
	}
	switch {
	case want.AggregationRule == nil && out.AggregationRule != nil:
		out.AggregationRule = nil
		changed = true
	case want.AggregationRule != nil:
		if missing := missingSelectors(out.AggregationRule, want.AggregationRule); len(missing) > 0 {
			if out.AggregationRule == nil {
				out.AggregationRule = &rbacv1.AggregationRule{}
			}
			out.AggregationRule.ClusterRoleSelectors = append(out.AggregationRule.ClusterRoleSelectors, missing...)
			changed = true
		}
	}
	return out, op(changed)
}

// ReconcileRole is ReconcileClusterRole for a namespaced Role.
func ReconcileRole(existing, want *rbacv1.Role) (*rbacv1.Role, Operation) {
	if existing == nil {
		return want.DeepCopy(), OpCreate
	}
	if protected(existing.Annotations) {
		return existing.DeepCopy(), OpNone
	}
	out := existing.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, &want.ObjectMeta)
	if missing := missingRules(out.Rules, want.Rules); len(missing) > 0 {
		out.Rules = append(out.Rules, missing...)
		changed = true
	}
	return out, op(changed)
}

// ReconcileClusterRoleBinding returns what the stored ClusterRoleBinding existing (nil when
// there is none) must become to hold want: the wanted subjects it lacks are added, and a
// binding to another role is replaced (OpRecreate).
func ReconcileClusterRoleBinding(existing, want *rbacv1.ClusterRoleBinding) (*rbacv1.ClusterRoleBinding, Operation) {
	if existing == nil {
		return want.DeepCopy(), OpCreate
	}
	if protected(existing.Annotations) {
		return existing.DeepCopy(), OpNone
	}
	if existing.RoleRef != want.RoleRef {
		return want.DeepCopy(), OpRecreate
	}
	out := existing.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, &want.ObjectMeta)
	if missing := missingSubjects(out.Subjects, want.Subjects); len(missing) > 0 {
		out.Subjects = append(out.Subjects, missing...)
		changed = true
	}
	return out, op(changed)
}

// ReconcileRoleBinding is ReconcileClusterRoleBinding for a namespaced RoleBinding.
func ReconcileRoleBinding(existing, want *rbacv1.RoleBinding) (*rbacv1.RoleBinding, Operation) {
	if existing == nil {
		return want.DeepCopy(), OpCreate
	}
	if protected(existing.Annotations) {
		return existing.DeepCopy(), OpNone
	}
	if existing.RoleRef != want.RoleRef {
		return want.DeepCopy(), OpRecreate
	}
	out := existing.DeepCopy()
	changed := mergeMeta(&out.ObjectMeta, &want.ObjectMeta)
	if missing := missingSubjects(out.Subjects, want.Subjects); len(missing) > 0 {
		out.Subjects = append(out.Subjects, missing...)
		changed = true
	}
	return out, op(changed)
}

// protected reports whether an administrator opted the object out of reconciliation.
func protected(annotations map[string]string) bool {
	return annotations[rbacv1.AutoUpdateAnnotationKey] == "false"
}

func op(changed bool) Operation {
	if changed {
		return OpUpdate
	}
	return OpNone
}

// mergeMeta adds want's labels and annotations that out lacks, keeping out's values of the
// keys both have; it reports whether out changed.
func mergeMeta(out, want *metav1.ObjectMeta) bool {
	labels, lc := merged(out.Labels, want.Labels)
	annotations, ac := merged(out.Annotations, want.Annotations)
	out.Labels, out.Annotations = labels, annotations
	return lc || ac
}

func merged(have, want map[string]string) (map[string]string, bool) {
	changed := false
	for k, v := range want {
		if _, ok := have[k]; ok {
			continue
		}
		if !changed {
			have = maps.Clone(have)
			if have == nil {
				have = map[string]string{}
			}
			changed = true
		}
		have[k] = v
	}
	return have, changed
}

// missingRules are the rules of want that have does not cover. Each is added whole, not as
// the single verb and resource pieces the coverage check breaks it into, so the stored role
// stays readable.
func missingRules(have, want []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range want {
		if ok, _ := validation.Covers(have, []rbacv1.PolicyRule{r}); !ok {
			out = append(out, *r.DeepCopy())
		}
	}
	return out
}

// missingSelectors are want's selectors that have lacks, compared semantically.
func missingSelectors(have, want *rbacv1.AggregationRule) []metav1.LabelSelector {
	var out []metav1.LabelSelector
	for _, w := range want.ClusterRoleSelectors {
		found := have != nil && slices.ContainsFunc(have.ClusterRoleSelectors, func(h metav1.LabelSelector) bool {
			return equality.Semantic.DeepEqual(h, w)
		})
		if !found {
			out = append(out, *w.DeepCopy())
		}
	}
	return out
}

// missingSubjects are want's subjects that have lacks, each once.
func missingSubjects(have, want []rbacv1.Subject) []rbacv1.Subject {
	var out []rbacv1.Subject
	for _, s := range want {
		if !slices.Contains(have, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
