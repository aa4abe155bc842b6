// Package webhook is the apiserver's webhook admission, as Kubernetes' MutatingAdmissionWebhook
// and ValidatingAdmissionWebhook plugins: for each write a client makes, it picks the webhooks
// of the cluster's MutatingWebhookConfigurations and ValidatingWebhookConfigurations whose
// rules and selectors match, sends each an admission.k8s.io/v1 AdmissionReview over HTTPS, and
// applies the JSON patches mutating webhooks answer with, or refuses the write as a webhook
// says. Mutating webhooks run one after another before the object is validated, validating
// webhooks in parallel after it was.
package webhook
