package bootstrappolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	readPods   = rule("get", "list").groups("").resources("pods").rule()
	readAll    = rule("*").groups("").resources("*").rule()
	writeJobs  = rule("create").groups("batch").resources("jobs").rule()
	toView     = metav1.LabelSelector{MatchLabels: map[string]string{AggregateToView: "true"}}
	toCustom   = metav1.LabelSelector{MatchLabels: map[string]string{"example.com/aggregate": "true"}}
	alice      = userSubject("alice")
	bob        = userSubject("bob")
	viewRef    = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}
	editRef    = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"}
	autoupdate = map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}
	frozen     = map[string]string{rbacv1.AutoUpdateAnnotationKey: "false"}
	defaults   = map[string]string{BootstrappingLabel: BootstrappingValue}
)

// meta is stored or wanted metadata; a resourceVersion marks a stored object.
func meta(rv string, labels, annotations map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: "r", ResourceVersion: rv, Labels: labels, Annotations: annotations}
}

func TestReconcileClusterRole(t *testing.T) {
	want := &rbacv1.ClusterRole{ObjectMeta: meta("", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}}
	aggregatedWant := &rbacv1.ClusterRole{ObjectMeta: meta("", defaults, autoupdate),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{toView}}}
	tests := []struct {
		name     string
		existing *rbacv1.ClusterRole
		want     *rbacv1.ClusterRole
		out      *rbacv1.ClusterRole
		op       Operation
	}{
		{
			name: "missing is created", want: want,
			out: want, op: OpCreate,
		},
		{
			name:     "the same is left",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			want:     want,
			out:      &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			op:       OpNone,
		},
		{
			name:     "a missing rule is added and an extra one kept",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, readAll}},
			want:     want,
			out:      &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, readAll, writeJobs}},
			op:       OpUpdate,
		},
		{
			name:     "rules covered by broader ones are not added",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readAll, writeJobs}},
			want:     want,
			out:      &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readAll, writeJobs}},
			op:       OpNone,
		},
		{
			name:     "autoupdate false is left alone",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", nil, frozen)},
			want:     want,
			out:      &rbacv1.ClusterRole{ObjectMeta: meta("7", nil, frozen)},
			op:       OpNone,
		},
		{
			name:     "no annotation is reconciled and gets it",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", nil, nil), Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			want:     want,
			out:      &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			op:       OpUpdate,
		},
		{
			name: "stored label values win and other labels stay",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", map[string]string{BootstrappingLabel: "mine", "team": "a"}, autoupdate),
				Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			want: want,
			out: &rbacv1.ClusterRole{ObjectMeta: meta("7", map[string]string{BootstrappingLabel: "mine", "team": "a"}, autoupdate),
				Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			op: OpNone,
		},
		{
			name: "a missing selector is added and an extra one kept; aggregated rules stay",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readAll},
				AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{toCustom}}},
			want: aggregatedWant,
			out: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readAll},
				AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{toCustom, toView}}},
			op: OpUpdate,
		},
		{
			name:     "an aggregation rule is added to a role without one",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate)},
			want:     aggregatedWant,
			out: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate),
				AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{toView}}},
			op: OpUpdate,
		},
		{
			name: "an aggregation rule the default lacks is removed",
			existing: &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs},
				AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{toCustom}}},
			want: want,
			out:  &rbacv1.ClusterRole{ObjectMeta: meta("7", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			op:   OpUpdate,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.existing.DeepCopy()
			out, op := ReconcileClusterRole(tc.existing, tc.want)
			if op != tc.op {
				t.Errorf("operation = %s, want %s", op, tc.op)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.existing); diff != "" {
				t.Errorf("the stored role was changed in place (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReconcileRole(t *testing.T) {
	want := &rbacv1.Role{ObjectMeta: meta("", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}}
	tests := []struct {
		name     string
		existing *rbacv1.Role
		out      *rbacv1.Role
		op       Operation
	}{
		{name: "missing is created", out: want, op: OpCreate},
		{
			name:     "a missing rule is added",
			existing: &rbacv1.Role{ObjectMeta: meta("3", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods}},
			out:      &rbacv1.Role{ObjectMeta: meta("3", defaults, autoupdate), Rules: []rbacv1.PolicyRule{readPods, writeJobs}},
			op:       OpUpdate,
		},
		{
			name:     "covered is left",
			existing: &rbacv1.Role{ObjectMeta: meta("3", defaults, autoupdate), Rules: []rbacv1.PolicyRule{writeJobs, readAll}},
			out:      &rbacv1.Role{ObjectMeta: meta("3", defaults, autoupdate), Rules: []rbacv1.PolicyRule{writeJobs, readAll}},
			op:       OpNone,
		},
		{
			name:     "autoupdate false is left alone",
			existing: &rbacv1.Role{ObjectMeta: meta("3", defaults, frozen)},
			out:      &rbacv1.Role{ObjectMeta: meta("3", defaults, frozen)},
			op:       OpNone,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, op := ReconcileRole(tc.existing, want)
			if op != tc.op {
				t.Errorf("operation = %s, want %s", op, tc.op)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReconcileClusterRoleBinding(t *testing.T) {
	want := &rbacv1.ClusterRoleBinding{ObjectMeta: meta("", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{alice, alice}}
	tests := []struct {
		name     string
		existing *rbacv1.ClusterRoleBinding
		out      *rbacv1.ClusterRoleBinding
		op       Operation
	}{
		{name: "missing is created", out: want, op: OpCreate},
		{
			name:     "the same is left",
			existing: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{alice}},
			out:      &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{alice}},
			op:       OpNone,
		},
		{
			name:     "a missing subject is added once and an extra one kept",
			existing: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{bob}},
			out:      &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{bob, alice}},
			op:       OpUpdate,
		},
		{
			name:     "a subject of another kind is another subject",
			existing: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{groupSubject("alice")}},
			out:      &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: viewRef, Subjects: []rbacv1.Subject{groupSubject("alice"), alice}},
			op:       OpUpdate,
		},
		{
			name:     "another roleRef is replaced",
			existing: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", defaults, autoupdate), RoleRef: editRef, Subjects: []rbacv1.Subject{alice, bob}},
			out:      want,
			op:       OpRecreate,
		},
		{
			name:     "autoupdate false keeps even another roleRef",
			existing: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", nil, frozen), RoleRef: editRef},
			out:      &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", nil, frozen), RoleRef: editRef},
			op:       OpNone,
		},
		{
			name:     "missing labels and annotations are added",
			existing: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", map[string]string{"team": "a"}, nil), RoleRef: viewRef, Subjects: []rbacv1.Subject{alice}},
			out: &rbacv1.ClusterRoleBinding{ObjectMeta: meta("5", map[string]string{"team": "a", BootstrappingLabel: BootstrappingValue}, autoupdate),
				RoleRef: viewRef, Subjects: []rbacv1.Subject{alice}},
			op: OpUpdate,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.existing.DeepCopy()
			out, op := ReconcileClusterRoleBinding(tc.existing, want)
			if op != tc.op {
				t.Errorf("operation = %s, want %s", op, tc.op)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.existing); diff != "" {
				t.Errorf("the stored binding was changed in place (-before +after):\n%s", diff)
			}
		})
	}
}

func TestReconcileRoleBinding(t *testing.T) {
	roleRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}
	want := &rbacv1.RoleBinding{ObjectMeta: meta("", defaults, autoupdate), RoleRef: roleRef, Subjects: []rbacv1.Subject{alice}}
	tests := []struct {
		name     string
		existing *rbacv1.RoleBinding
		out      *rbacv1.RoleBinding
		op       Operation
	}{
		{name: "missing is created", out: want, op: OpCreate},
		{
			name:     "a missing subject is added",
			existing: &rbacv1.RoleBinding{ObjectMeta: meta("2", defaults, autoupdate), RoleRef: roleRef, Subjects: []rbacv1.Subject{bob}},
			out:      &rbacv1.RoleBinding{ObjectMeta: meta("2", defaults, autoupdate), RoleRef: roleRef, Subjects: []rbacv1.Subject{bob, alice}},
			op:       OpUpdate,
		},
		{
			name:     "a binding to the ClusterRole of the same name is replaced",
			existing: &rbacv1.RoleBinding{ObjectMeta: meta("2", defaults, autoupdate), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "r"}},
			out:      want,
			op:       OpRecreate,
		},
		{
			name:     "autoupdate false is left alone",
			existing: &rbacv1.RoleBinding{ObjectMeta: meta("2", nil, frozen), RoleRef: roleRef},
			out:      &rbacv1.RoleBinding{ObjectMeta: meta("2", nil, frozen), RoleRef: roleRef},
			op:       OpNone,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, op := ReconcileRoleBinding(tc.existing, want)
			if op != tc.op {
				t.Errorf("operation = %s, want %s", op, tc.op)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// Reconciling what was just reconciled changes nothing, for every default.
func TestReconcileDefaultsIsStable(t *testing.T) {
	for _, want := range ClusterRoles() {
		t.Run("ClusterRole/"+want.Name, func(t *testing.T) {
			created, op := ReconcileClusterRole(nil, &want)
			if op != OpCreate {
				t.Fatalf("operation on nothing = %s, want %s", op, OpCreate)
			}
			if _, op := ReconcileClusterRole(created, &want); op != OpNone {
				t.Errorf("operation on the created role = %s, want %s", op, OpNone)
			}
		})
	}
	for _, want := range ClusterRoleBindings() {
		t.Run("ClusterRoleBinding/"+want.Name, func(t *testing.T) {
			created, _ := ReconcileClusterRoleBinding(nil, &want)
			if _, op := ReconcileClusterRoleBinding(created, &want); op != OpNone {
				t.Errorf("operation on the created binding = %s, want %s", op, OpNone)
			}
		})
	}
}
