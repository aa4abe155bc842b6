package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultWebhookTimeout is how long the apiserver waits for a webhook that names no timeout,
// as Kubernetes' admissionregistration/v1 defaults.
const defaultWebhookTimeout int32 = 10

// ValidatingWebhookConfiguration sets what Kubernetes defaults on each of its webhooks.
func ValidatingWebhookConfiguration(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		webhookCommon(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
	}
}

// MutatingWebhookConfiguration sets what Kubernetes defaults on each of its webhooks; a
// mutating webhook is also called only once unless it asks otherwise.
func MutatingWebhookConfiguration(c *admissionregistrationv1.MutatingWebhookConfiguration) {
	for i := range c.Webhooks {
		h := &c.Webhooks[i]
		webhookCommon(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
		if h.ReinvocationPolicy == nil {
			p := admissionregistrationv1.NeverReinvocationPolicy
			h.ReinvocationPolicy = &p
		}
	}
}

// webhookCommon defaults the fields both kinds of webhook share: failing closed, matching
// equivalent requests, every namespace and object, ten seconds, rules of any scope, and a
// Service's port 443.
func webhookCommon(failure **admissionregistrationv1.FailurePolicyType, match **admissionregistrationv1.MatchPolicyType,
	nsSel, objSel **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *failure == nil {
		p := admissionregistrationv1.Fail
		*failure = &p
	}
	if *match == nil {
		p := admissionregistrationv1.Equivalent
		*match = &p
	}
	if *nsSel == nil {
		*nsSel = &metav1.LabelSelector{}
	}
	if *objSel == nil {
		*objSel = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		t := defaultWebhookTimeout
		*timeout = &t
	}
	for i := range rules {
		if rules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			rules[i].Scope = &s
		}
	}
	if cc.Service != nil && cc.Service.Port == nil {
		p := int32(443)
		cc.Service.Port = &p
	}
}
