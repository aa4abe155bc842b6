package defaults

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Webhooks get Kubernetes' v1 defaults; what a webhook states is kept.
func TestWebhookConfigurationDefaults(t *testing.T) {
	rules := func(scope *admissionregistrationv1.ScopeType) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: scope}}}
	}
	svc := func(port *int32) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Port: port}}
	}
	run(t, MutatingWebhookConfiguration, []defaultCase[*admissionregistrationv1.MutatingWebhookConfiguration]{
		{name: "everything unset",
			in: &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.example.com",
				ClientConfig: svc(nil), Rules: rules(nil)}}},
			out: &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.example.com",
				ClientConfig: svc(ptr(int32(443))), Rules: rules(ptr(admissionregistrationv1.AllScopes)),
				FailurePolicy: ptr(admissionregistrationv1.Fail), MatchPolicy: ptr(admissionregistrationv1.Equivalent),
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, TimeoutSeconds: ptr(int32(10)),
				ReinvocationPolicy: ptr(admissionregistrationv1.NeverReinvocationPolicy)}}}},
		{name: "stated values kept",
			in: &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.example.com",
				ClientConfig: svc(ptr(int32(8443))), Rules: rules(ptr(admissionregistrationv1.NamespacedScope)),
				FailurePolicy: ptr(admissionregistrationv1.Ignore), MatchPolicy: ptr(admissionregistrationv1.Exact), TimeoutSeconds: ptr(int32(3)),
				ReinvocationPolicy: ptr(admissionregistrationv1.IfNeededReinvocationPolicy)}}},
			out: &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a.example.com",
				ClientConfig: svc(ptr(int32(8443))), Rules: rules(ptr(admissionregistrationv1.NamespacedScope)),
				FailurePolicy: ptr(admissionregistrationv1.Ignore), MatchPolicy: ptr(admissionregistrationv1.Exact),
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, TimeoutSeconds: ptr(int32(3)),
				ReinvocationPolicy: ptr(admissionregistrationv1.IfNeededReinvocationPolicy)}}}},
	})
	run(t, ValidatingWebhookConfiguration, []defaultCase[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		{name: "everything unset",
			in: &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com",
				ClientConfig: svc(nil), Rules: rules(nil)}}},
			out: &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.example.com",
				ClientConfig: svc(ptr(int32(443))), Rules: rules(ptr(admissionregistrationv1.AllScopes)),
				FailurePolicy: ptr(admissionregistrationv1.Fail), MatchPolicy: ptr(admissionregistrationv1.Equivalent),
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}, TimeoutSeconds: ptr(int32(10))}}}},
	})
}
