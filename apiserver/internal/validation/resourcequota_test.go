package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/shared/quota/quotatest"
)

func newResourceQuota() *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: meta("quota"), Spec: corev1.ResourceQuotaSpec{
		Hard: quotatest.List("pods", "10", "requests.cpu", "4", "limits.memory", "8Gi", "count/deployments.apps", "3",
			"requests.nvidia.com/gpu", "2", "gold.storageclass.storage.k8s.io/requests.storage", "100Gi", "requests.hugepages-2Mi", "1Gi"),
	}}
}

// ResourceQuotas are checked as Kubernetes' ValidateResourceQuota checks them.
func TestResourceQuotaValidation(t *testing.T) {
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	podsOnly := func(q *corev1.ResourceQuota) { q.Spec.Hard = quotatest.List("pods", "5", "requests.cpu", "1") }
	runCreate(t, ResourceQuota, nil, newResourceQuota, []createCase[*corev1.ResourceQuota]{
		{name: "valid"},
		{name: "unknown resource", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["widgets"] = resource.MustParse("1") },
			want: []problem{inv("spec.hard[widgets]"), inv("spec.hard[widgets]")}},
		{name: "storage is no quota resource", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["storage"] = resource.MustParse("1Gi") },
			want: []problem{inv("spec.hard[storage]")}},
		{name: "bad qualified name", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["count/-x"] = resource.MustParse("1") },
			want: []problem{inv("spec.hard[count/-x]")}},
		{name: "negative", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["requests.cpu"] = resource.MustParse("-1") },
			want: []problem{inv("spec.hard[requests.cpu]")}},
		{name: "fractional count", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["pods"] = resource.MustParse("1500m") },
			want: []problem{inv("spec.hard[pods]")}},
		{name: "fractional extended resource", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["nvidia.com/gpu"] = resource.MustParse("500m") },
			want: []problem{inv("spec.hard[nvidia.com/gpu]")}},
		{name: "status checked too", mutate: func(q *corev1.ResourceQuota) { q.Status.Used = quotatest.List("pods", "-1") },
			want: []problem{inv("status.used[pods]")}},
		{name: "pod scopes", mutate: func(q *corev1.ResourceQuota) {
			podsOnly(q)
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotBestEffort}
		}},
		{name: "BestEffort limits only the number of pods", mutate: func(q *corev1.ResourceQuota) {
			podsOnly(q)
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, want: []problem{inv("spec.scopes")}},
		{name: "a pod scope on other resources", mutate: func(q *corev1.ResourceQuota) {
			q.Spec.Hard = quotatest.List("services", "1")
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
		}, want: []problem{inv("spec.scopes")}},
		{name: "conflicting scopes", mutate: func(q *corev1.ResourceQuota) {
			podsOnly(q)
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}
		}, want: []problem{inv("spec.scopes")}},
		{name: "unknown scope", mutate: func(q *corev1.ResourceQuota) {
			podsOnly(q)
			q.Spec.Scopes = []corev1.ResourceQuotaScope{"Sometimes"}
		}, want: []problem{inv("spec.scopes")}},
		{name: "priority class selector", mutate: func(q *corev1.ResourceQuota) {
			podsOnly(q)
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
		}},
		{name: "In without values", mutate: func(q *corev1.ResourceQuota) {
			podsOnly(q)
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn}}}
		}, want: []problem{req("spec.scopeSelector.matchExpressions.values")}},
		{name: "BestEffort selector must be Exists", mutate: func(q *corev1.ResourceQuota) {
			q.Spec.Hard = quotatest.List("pods", "5")
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopeBestEffort, Operator: corev1.ScopeSelectorOpDoesNotExist}}}
		}, want: []problem{inv("spec.scopeSelector.matchExpressions.operator")}},
		{name: "conflicting selectors", mutate: func(q *corev1.ResourceQuota) {
			q.Spec.Hard = quotatest.List("pods", "5")
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				exists(corev1.ResourceQuotaScopeBestEffort), exists(corev1.ResourceQuotaScopeNotBestEffort)}}
		}, want: []problem{inv("spec.scopeSelector.matchExpressions")}},
	})
	runUpdate(t, ResourceQuota, nil, newResourceQuota, []updateCase[*corev1.ResourceQuota]{
		{name: "hard may change", mutate: func(q *corev1.ResourceQuota) { q.Spec.Hard["pods"] = resource.MustParse("20") }},
		{name: "scopes may not", mutate: func(q *corev1.ResourceQuota) {
			q.Spec.Hard = quotatest.List("pods", "5")
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
		}, want: []problem{inv("spec.scopes")}},
	})
}

func newLimitRange() *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: meta("limits"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Min: quotatest.List("cpu", "100m"), Max: quotatest.List("cpu", "2", "memory", "1Gi"),
			DefaultRequest: quotatest.List("cpu", "200m"), MaxLimitRequestRatio: quotatest.List("cpu", "10")},
		{Type: corev1.LimitTypePod, Max: quotatest.List("cpu", "4")},
		{Type: corev1.LimitTypePersistentVolumeClaim, Min: quotatest.List("storage", "1Gi")},
	}}}
}

// LimitRanges are checked as Kubernetes' ValidateLimitRange checks them, after its defaults.
func TestLimitRangeValidation(t *testing.T) {
	container := func(lr *corev1.LimitRange) *corev1.LimitRangeItem { return &lr.Spec.Limits[0] }
	runCreate(t, LimitRange, defaults.LimitRange, newLimitRange, []createCase[*corev1.LimitRange]{
		{name: "valid"},
		{name: "unknown type", mutate: func(lr *corev1.LimitRange) { lr.Spec.Limits[1].Type = "Node" },
			want: []problem{inv("spec.limits[1].type")}},
		{name: "qualified type", mutate: func(lr *corev1.LimitRange) { lr.Spec.Limits[1].Type = "example.com/Node" }},
		{name: "duplicate type", mutate: func(lr *corev1.LimitRange) { lr.Spec.Limits[1].Type = corev1.LimitTypeContainer },
			want: []problem{dup("spec.limits[1].type")}},
		{name: "storage is no container resource", mutate: func(lr *corev1.LimitRange) { container(lr).Max["storage"] = resource.MustParse("1Gi") },
			// The defaults copy max into default and defaultRequest, which are refused too.
			want: []problem{inv("spec.limits[0].max[storage]"), inv("spec.limits[0].default[storage]"), inv("spec.limits[0].defaultRequest[storage]")}},
		{name: "extended resource", mutate: func(lr *corev1.LimitRange) { container(lr).Max["example.com/gpu"] = resource.MustParse("1") }},
		{name: "min above max", mutate: func(lr *corev1.LimitRange) { container(lr).Min["cpu"] = resource.MustParse("3") },
			want: []problem{inv("spec.limits[0].min[cpu]"), inv("spec.limits[0].defaultRequest[cpu]"), inv("spec.limits[0].default[cpu]"),
				inv("spec.limits[0].maxLimitRequestRatio[cpu]")}},
		{name: "default request above max", mutate: func(lr *corev1.LimitRange) { container(lr).DefaultRequest["cpu"] = resource.MustParse("3") },
			want: []problem{inv("spec.limits[0].defaultRequest[cpu]"), inv("spec.limits[0].defaultRequest[cpu]")}},
		{name: "default request above default", mutate: func(lr *corev1.LimitRange) {
			container(lr).Default = quotatest.List("cpu", "500m")
			container(lr).DefaultRequest["cpu"] = resource.MustParse("1")
		}, want: []problem{inv("spec.limits[0].defaultRequest[cpu]")}},
		{name: "ratio below 1", mutate: func(lr *corev1.LimitRange) { container(lr).MaxLimitRequestRatio["cpu"] = resource.MustParse("500m") },
			want: []problem{inv("spec.limits[0].maxLimitRequestRatio[cpu]")}},
		{name: "ratio above max/min", mutate: func(lr *corev1.LimitRange) { container(lr).MaxLimitRequestRatio["cpu"] = resource.MustParse("30") },
			want: []problem{inv("spec.limits[0].maxLimitRequestRatio[cpu]")}},
		{name: "Pod items take no defaults", mutate: func(lr *corev1.LimitRange) { lr.Spec.Limits[1].Default = quotatest.List("cpu", "1") },
			want: []problem{forb("spec.limits[1].default")}},
		{name: "claim items bound storage", mutate: func(lr *corev1.LimitRange) { lr.Spec.Limits[2].Min = quotatest.List("cpu", "1") },
			want: []problem{req("spec.limits[2].limits")}},
		{name: "huge pages default request must equal the default", mutate: func(lr *corev1.LimitRange) {
			container(lr).Default = quotatest.List("hugepages-2Mi", "4Mi")
			container(lr).DefaultRequest["hugepages-2Mi"] = resource.MustParse("2Mi")
		}, want: []problem{inv("spec.limits[0].defaultRequest[hugepages-2Mi]")}},
	})
}
