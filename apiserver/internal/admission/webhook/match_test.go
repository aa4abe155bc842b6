package webhook

import (
	"context"
	"errors"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploysGVR    = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	hpaV2GVR      = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	hpaV1GVR      = schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}
)

func rule(ops []admissionregistrationv1.OperationType, groups, versions, resources []string, scope admissionregistrationv1.ScopeType) admissionregistrationv1.RuleWithOperations {
	r := admissionregistrationv1.RuleWithOperations{Operations: ops,
		Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}
	if scope != "" {
		r.Rule.Scope = &scope
	}
	return r
}

var (
	all    = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	create = []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	star   = []string{"*"}
	core   = []string{""}
	v1     = []string{"v1"}
)

// Rules pick writes by operation, group, version, resource with its subresource patterns, and
// scope, as Kubernetes' rule matcher.
func TestRuleMatches(t *testing.T) {
	cases := []struct {
		name       string
		rule       admissionregistrationv1.RuleWithOperations
		op         admissionv1.Operation
		gvr        schema.GroupVersionResource
		sub        string
		namespaced bool
		want       bool
	}{
		{"exact resource", rule(create, core, v1, []string{"pods"}, ""), admissionv1.Create, podsGVR, "", true, true},
		{"other operation", rule(create, core, v1, []string{"pods"}, ""), admissionv1.Update, podsGVR, "", true, false},
		{"any operation", rule(all, core, v1, []string{"pods"}, ""), admissionv1.Delete, podsGVR, "", true, true},
		{"other group", rule(all, core, v1, []string{"deployments"}, ""), admissionv1.Create, deploysGVR, "", true, false},
		{"any group and version", rule(all, star, star, []string{"deployments"}, ""), admissionv1.Create, deploysGVR, "", true, true},
		{"other version", rule(all, []string{"apps"}, []string{"v1beta1"}, []string{"deployments"}, ""), admissionv1.Create, deploysGVR, "", true, false},
		{"plain resource skips subresources", rule(all, core, v1, []string{"pods"}, ""), admissionv1.Update, podsGVR, "status", true, false},
		{"x/y", rule(all, core, v1, []string{"pods/status"}, ""), admissionv1.Update, podsGVR, "status", true, true},
		{"x/y skips x", rule(all, core, v1, []string{"pods/status"}, ""), admissionv1.Update, podsGVR, "", true, false},
		{"x/y skips x/z", rule(all, core, v1, []string{"pods/status"}, ""), admissionv1.Update, podsGVR, "binding", true, false},
		{"x/* covers x/y", rule(all, core, v1, []string{"pods/*"}, ""), admissionv1.Update, podsGVR, "ephemeralcontainers", true, true},
		{"x/* covers x", rule(all, core, v1, []string{"pods/*"}, ""), admissionv1.Update, podsGVR, "", true, true},
		{"*/y", rule(all, star, star, []string{"*/status"}, ""), admissionv1.Update, deploysGVR, "status", true, true},
		{"*/y skips other subresources", rule(all, star, star, []string{"*/status"}, ""), admissionv1.Update, deploysGVR, "scale", false, false},
		{"* skips subresources", rule(all, star, star, []string{"*"}, ""), admissionv1.Update, podsGVR, "status", true, false},
		{"* covers resources", rule(all, star, star, []string{"*"}, ""), admissionv1.Update, nodesGVR, "", false, true},
		{"*/* covers all", rule(all, star, star, []string{"*/*"}, ""), admissionv1.Update, nodesGVR, "status", false, true},
		{"Namespaced scope on a namespaced kind", rule(all, star, star, []string{"*"}, admissionregistrationv1.NamespacedScope), admissionv1.Create, podsGVR, "", true, true},
		{"Namespaced scope on a cluster kind", rule(all, star, star, []string{"*"}, admissionregistrationv1.NamespacedScope), admissionv1.Create, nodesGVR, "", false, false},
		{"Cluster scope on a namespaced kind", rule(all, star, star, []string{"*"}, admissionregistrationv1.ClusterScope), admissionv1.Create, podsGVR, "", true, false},
		{"Cluster scope on a cluster kind", rule(all, star, star, []string{"*"}, admissionregistrationv1.ClusterScope), admissionv1.Create, nodesGVR, "", false, true},
		{"Cluster scope on namespaces", rule(all, star, star, []string{"*"}, admissionregistrationv1.ClusterScope), admissionv1.Create, namespacesGVR, "", false, true},
		{"* scope", rule(all, star, star, []string{"*"}, admissionregistrationv1.AllScopes), admissionv1.Create, podsGVR, "", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ruleMatches(&tc.rule, tc.op, tc.gvr, tc.sub, tc.namespaced); got != tc.want {
				t.Errorf("ruleMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func pod(ns string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: lbls}}
}

func newTestHook(t *testing.T, match admissionregistrationv1.MatchPolicyType, nsSel, objSel *metav1.LabelSelector, rules ...admissionregistrationv1.RuleWithOperations) *hook {
	t.Helper()
	h, err := newHook("config", "hook.example.com", admissionregistrationv1.WebhookClientConfig{}, rules, nil, &match, nsSel, objSel, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A write matches a hook when a rule covers it (as requested, or as stored for Equivalent),
// its namespace's labels (a Namespace's own) fit the namespaceSelector and the new or the old
// object's labels fit the objectSelector.
func TestHookMatches(t *testing.T) {
	nsLabels := map[string]labels.Set{"team-a": {"team": "a"}, "team-b": {"team": "b"}}
	lookup := func(_ context.Context, name string) (labels.Set, error) {
		if set, ok := nsLabels[name]; ok {
			return set, nil
		}
		return nil, errors.New("namespace " + name + " not found")
	}
	teamA := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	canary := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "canary", Operator: metav1.LabelSelectorOpExists}}}
	podsRule := rule(all, core, v1, []string{"pods"}, "")
	anyRule := rule(all, star, star, []string{"*"}, "")
	hpaV2Rule := rule(all, []string{"autoscaling"}, []string{"v2"}, []string{"horizontalpodautoscalers"}, "")
	podWrite := func(ns string, obj, old runtime.Object) *Attributes {
		op := admissionv1.Create
		if old != nil {
			op = admissionv1.Update
		}
		return &Attributes{Operation: op, Resource: podsGVR, RequestResource: podsGVR, Namespaced: true, Namespace: ns, Object: obj, OldObject: old}
	}
	nsWrite := func(op admissionv1.Operation, obj, old runtime.Object) *Attributes {
		return &Attributes{Operation: op, Resource: namespacesGVR, RequestResource: namespacesGVR, Object: obj, OldObject: old}
	}
	namespace := func(lbls map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: lbls}}
	}
	hpaV1Write := &Attributes{Operation: admissionv1.Create, Resource: hpaV2GVR, RequestResource: hpaV1GVR, Namespaced: true, Namespace: "team-a"}
	cases := []struct {
		name    string
		hook    *hook
		a       *Attributes
		want    bool
		wantErr bool
	}{
		{"rule and empty selectors", newTestHook(t, "Equivalent", &metav1.LabelSelector{}, &metav1.LabelSelector{}, podsRule), podWrite("team-a", pod("team-a", nil), nil), true, false},
		{"no rule", newTestHook(t, "Equivalent", nil, nil, rule(all, []string{"apps"}, v1, []string{"*"}, "")), podWrite("team-a", pod("team-a", nil), nil), false, false},
		{"namespace selected", newTestHook(t, "Equivalent", teamA, nil, podsRule), podWrite("team-a", pod("team-a", nil), nil), true, false},
		{"namespace not selected", newTestHook(t, "Equivalent", teamA, nil, podsRule), podWrite("team-b", pod("team-b", nil), nil), false, false},
		{"namespace unreadable", newTestHook(t, "Equivalent", teamA, nil, podsRule), podWrite("gone", pod("gone", nil), nil), false, true},
		{"cluster-scoped objects ignore namespaceSelector", newTestHook(t, "Equivalent", teamA, nil, anyRule),
			&Attributes{Operation: admissionv1.Create, Resource: nodesGVR, RequestResource: nodesGVR, Object: &corev1.Node{}}, true, false},
		{"a namespace is judged by its own labels", newTestHook(t, "Equivalent", teamA, nil, anyRule), nsWrite(admissionv1.Create, namespace(map[string]string{"team": "a"}), nil), true, false},
		{"a namespace without the labels", newTestHook(t, "Equivalent", teamA, nil, anyRule), nsWrite(admissionv1.Create, namespace(nil), nil), false, false},
		{"a deleted namespace by its stored labels", newTestHook(t, "Equivalent", teamA, nil, anyRule), nsWrite(admissionv1.Delete, nil, namespace(map[string]string{"team": "a"})), true, false},
		{"object selected", newTestHook(t, "Equivalent", nil, canary, podsRule), podWrite("team-b", pod("team-b", map[string]string{"canary": ""}), nil), true, false},
		{"object not selected", newTestHook(t, "Equivalent", nil, canary, podsRule), podWrite("team-b", pod("team-b", nil), nil), false, false},
		{"old object selected", newTestHook(t, "Equivalent", nil, canary, podsRule),
			podWrite("team-b", pod("team-b", nil), pod("team-b", map[string]string{"canary": "yes"})), true, false},
		{"deleted object by its labels", newTestHook(t, "Equivalent", nil, canary, podsRule),
			&Attributes{Operation: admissionv1.Delete, Resource: podsGVR, RequestResource: podsGVR, Namespaced: true, Namespace: "team-b", OldObject: pod("team-b", map[string]string{"canary": ""})}, true, false},
		{"equivalent matches the stored version", newTestHook(t, "Equivalent", nil, nil, hpaV2Rule), hpaV1Write, true, false},
		{"exact does not", newTestHook(t, "Exact", nil, nil, hpaV2Rule), hpaV1Write, false, false},
		{"exact matches the requested version", newTestHook(t, "Exact", nil, nil,
			rule(all, []string{"autoscaling"}, v1, []string{"horizontalpodautoscalers"}, "")), hpaV1Write, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.hook.matches(t.Context(), tc.a, lookup, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}

// The webhook configurations themselves are never shown to webhooks.
func TestExempt(t *testing.T) {
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		want bool
	}{
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, true},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, true},
		{podsGVR, false},
	} {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			if got := exempt(&Attributes{Resource: tc.gvr, RequestResource: tc.gvr}); got != tc.want {
				t.Errorf("exempt = %v, want %v", got, tc.want)
			}
		})
	}
}
