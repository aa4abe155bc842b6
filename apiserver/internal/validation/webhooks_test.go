package validation

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/defaults"
)

func newValidatingWebhooks() *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "policy"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "check.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr("https://hooks.example.com/check")},
			Rules:                   []admissionregistrationv1.RuleWithOperations{webhookRule()},
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}}}
}

func webhookRule() admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods", "pods/status"}},
	}
}

// ValidatingWebhookConfigurations are checked as Kubernetes checks v1 objects, with its field
// paths.
func TestValidatingWebhookConfigurationValidation(t *testing.T) {
	hook := func(c *admissionregistrationv1.ValidatingWebhookConfiguration) *admissionregistrationv1.ValidatingWebhook {
		return &c.Webhooks[0]
	}
	type vwc = admissionregistrationv1.ValidatingWebhookConfiguration
	some := admissionregistrationv1.SideEffectClassSome
	runCreate(t, ValidatingWebhookConfiguration, defaults.ValidatingWebhookConfiguration, newValidatingWebhooks, []createCase[*vwc]{
		{name: "valid"},
		{name: "no webhooks", mutate: func(c *vwc) { c.Webhooks = nil }},
		{name: "name not fully qualified", mutate: func(c *vwc) { hook(c).Name = "check" }, want: []problem{inv("webhooks[0].name")}},
		{name: "name required", mutate: func(c *vwc) { hook(c).Name = "" }, want: []problem{req("webhooks[0].name")}},
		{name: "names unique", mutate: func(c *vwc) { c.Webhooks = append(c.Webhooks, c.Webhooks[0]) }, want: []problem{dup("webhooks[1].name")}},
		{name: "sideEffects required", mutate: func(c *vwc) { hook(c).SideEffects = nil }, want: []problem{req("webhooks[0].sideEffects")}},
		{name: "sideEffects Some refused in v1", mutate: func(c *vwc) { hook(c).SideEffects = &some }, want: []problem{nsup("webhooks[0].sideEffects")}},
		{name: "review versions required", mutate: func(c *vwc) { hook(c).AdmissionReviewVersions = nil }, want: []problem{req("webhooks[0].admissionReviewVersions")}},
		{name: "review versions must include v1", mutate: func(c *vwc) { hook(c).AdmissionReviewVersions = []string{"v2"} }, want: []problem{inv("webhooks[0].admissionReviewVersions")}},
		{name: "v1beta1 accepted", mutate: func(c *vwc) { hook(c).AdmissionReviewVersions = []string{"v2", "v1beta1"} }},
		{name: "duplicate review version", mutate: func(c *vwc) { hook(c).AdmissionReviewVersions = []string{"v1", "v1"} }, want: []problem{inv("webhooks[0].admissionReviewVersions[1]")}},
		{name: "url and service", mutate: func(c *vwc) {
			hook(c).ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}
		}, want: []problem{req("webhooks[0].clientConfig")}},
		{name: "neither url nor service", mutate: func(c *vwc) { hook(c).ClientConfig.URL = nil }, want: []problem{req("webhooks[0].clientConfig")}},
		{name: "url not https", mutate: func(c *vwc) { hook(c).ClientConfig.URL = ptr("http://hooks.example.com/") }, want: []problem{inv("webhooks[0].clientConfig.url")}},
		{name: "url with query", mutate: func(c *vwc) { hook(c).ClientConfig.URL = ptr("https://hooks.example.com/?a=b") }, want: []problem{inv("webhooks[0].clientConfig.url")}},
		{name: "url with fragment", mutate: func(c *vwc) { hook(c).ClientConfig.URL = ptr("https://hooks.example.com/#x") }, want: []problem{inv("webhooks[0].clientConfig.url")}},
		{name: "url with user", mutate: func(c *vwc) { hook(c).ClientConfig.URL = ptr("https://me@hooks.example.com/") }, want: []problem{inv("webhooks[0].clientConfig.url")}},
		{name: "url without host", mutate: func(c *vwc) { hook(c).ClientConfig.URL = ptr("https:///check") }, want: []problem{inv("webhooks[0].clientConfig.url")}},
		{name: "service", mutate: func(c *vwc) {
			hook(c).ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: ptr("/check/pods")}}
		}},
		{name: "service fields", mutate: func(c *vwc) {
			hook(c).ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Port: ptr[int32](70000), Path: ptr("check//x")}}
		}, want: []problem{req("webhooks[0].clientConfig.service.name"), req("webhooks[0].clientConfig.service.namespace"),
			inv("webhooks[0].clientConfig.service.port"), inv("webhooks[0].clientConfig.service.path"), inv("webhooks[0].clientConfig.service.path")}},
		{name: "timeout too long", mutate: func(c *vwc) { hook(c).TimeoutSeconds = ptr[int32](31) }, want: []problem{inv("webhooks[0].timeoutSeconds")}},
		{name: "timeout zero", mutate: func(c *vwc) { hook(c).TimeoutSeconds = ptr[int32](0) }, want: []problem{inv("webhooks[0].timeoutSeconds")}},
		{name: "failure policy", mutate: func(c *vwc) { hook(c).FailurePolicy = ptr[admissionregistrationv1.FailurePolicyType]("Maybe") }, want: []problem{nsup("webhooks[0].failurePolicy")}},
		{name: "match policy", mutate: func(c *vwc) { hook(c).MatchPolicy = ptr[admissionregistrationv1.MatchPolicyType]("Loose") }, want: []problem{nsup("webhooks[0].matchPolicy")}},
		{name: "selector", mutate: func(c *vwc) {
			hook(c).NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}
		}, want: []problem{inv("webhooks[0].namespaceSelector.matchLabels")}},
		{name: "rule lists required", mutate: func(c *vwc) { hook(c).Rules[0] = admissionregistrationv1.RuleWithOperations{} },
			want: []problem{req("webhooks[0].rules[0].operations"), req("webhooks[0].rules[0].apiGroups"), req("webhooks[0].rules[0].apiVersions"), req("webhooks[0].rules[0].resources")}},
		{name: "operation", mutate: func(c *vwc) { hook(c).Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"} }, want: []problem{nsup("webhooks[0].rules[0].operations[0]")}},
		{name: "wildcard operation alone", mutate: func(c *vwc) {
			hook(c).Rules[0].Operations = []admissionregistrationv1.OperationType{"*", "CREATE"}
		}, want: []problem{inv("webhooks[0].rules[0].operations")}},
		{name: "wildcard group alone", mutate: func(c *vwc) { hook(c).Rules[0].APIGroups = []string{"*", "apps"} }, want: []problem{inv("webhooks[0].rules[0].apiGroups")}},
		{name: "empty version", mutate: func(c *vwc) { hook(c).Rules[0].APIVersions = []string{""} }, want: []problem{req("webhooks[0].rules[0].apiVersions[0]")}},
		{name: "*/* alone", mutate: func(c *vwc) { hook(c).Rules[0].Resources = []string{"*/*", "pods"} }, want: []problem{inv("webhooks[0].rules[0].resources")}},
		{name: "* with a plain resource", mutate: func(c *vwc) { hook(c).Rules[0].Resources = []string{"*", "pods"} }, want: []problem{inv("webhooks[0].rules[0].resources")}},
		{name: "* with subresources", mutate: func(c *vwc) { hook(c).Rules[0].Resources = []string{"*", "pods/status"} }},
		{name: "x/* covers x/y", mutate: func(c *vwc) { hook(c).Rules[0].Resources = []string{"pods/*", "pods/status"} }, want: []problem{inv("webhooks[0].rules[0].resources[1]")}},
		{name: "*/y covers x/y", mutate: func(c *vwc) { hook(c).Rules[0].Resources = []string{"*/status", "pods/status"} }, want: []problem{inv("webhooks[0].rules[0].resources[1]")}},
		{name: "scope", mutate: func(c *vwc) { hook(c).Rules[0].Scope = ptr[admissionregistrationv1.ScopeType]("Global") }, want: []problem{nsup("webhooks[0].rules[0].scope")}},
	})
}

// Mutating webhooks are held to the same rules, and a known reinvocation policy.
func TestMutatingWebhookConfigurationValidation(t *testing.T) {
	type mwc = admissionregistrationv1.MutatingWebhookConfiguration
	fixture := func() *mwc {
		v := newValidatingWebhooks()
		h := v.Webhooks[0]
		return &mwc{ObjectMeta: v.ObjectMeta, Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: h.Name, ClientConfig: h.ClientConfig,
			Rules: h.Rules, SideEffects: h.SideEffects, AdmissionReviewVersions: h.AdmissionReviewVersions}}}
	}
	runCreate(t, MutatingWebhookConfiguration, defaults.MutatingWebhookConfiguration, fixture, []createCase[*mwc]{
		{name: "valid"},
		{name: "reinvocation policy", mutate: func(c *mwc) {
			c.Webhooks[0].ReinvocationPolicy = ptr[admissionregistrationv1.ReinvocationPolicyType]("Always")
		}, want: []problem{nsup("webhooks[0].reinvocationPolicy")}},
		{name: "sideEffects required", mutate: func(c *mwc) { c.Webhooks[0].SideEffects = nil }, want: []problem{req("webhooks[0].sideEffects")}},
		{name: "names unique", mutate: func(c *mwc) { c.Webhooks = append(c.Webhooks, c.Webhooks[0]) }, want: []problem{dup("webhooks[1].name")}},
	})
}
