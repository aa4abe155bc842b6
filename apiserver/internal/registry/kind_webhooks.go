package registry

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// ValidatingWebhookConfigurations and MutatingWebhookConfigurations name the HTTPS endpoints
// the apiserver's webhook admission calls about writes (apiserver/internal/admission/webhook).
var (
	_ = register(Kind[*admissionregistrationv1.ValidatingWebhookConfiguration]{
		Resource:   served("validatingwebhookconfigurations"),
		Default:    defaults.ValidatingWebhookConfiguration,
		Validation: validation.ValidatingWebhookConfiguration,
		Table:      tables.ValidatingWebhookConfiguration,
	})
	_ = register(Kind[*admissionregistrationv1.MutatingWebhookConfiguration]{
		Resource:   served("mutatingwebhookconfigurations"),
		Default:    defaults.MutatingWebhookConfiguration,
		Validation: validation.MutatingWebhookConfiguration,
		Table:      tables.MutatingWebhookConfiguration,
	})
)
