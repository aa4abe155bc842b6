package webhook

import (
	"context"
	"fmt"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	demov1 "minik8s.io/test/operator/api/v1"
)

// Paths the webhooks are served at (controller-runtime derives them from the group, version
// and kind; the chart's webhook configurations name them).
const (
	MutatePath   = "/mutate-demo-minik8s-io-v1-echoapp"
	ValidatePath = "/validate-demo-minik8s-io-v1-echoapp"
)

// ForbiddenWord may not appear, as a word, in spec.message.
const ForbiddenWord = "forbidden"

var forbidden = regexp.MustCompile(`(?i)\b` + ForbiddenWord + `\b`)

// Setup registers both webhooks on mgr's webhook server.
func Setup(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &demov1.EchoApp{}).
		WithDefaulter(Defaulter{}).
		WithValidator(Validator{}).
		Complete()
}

// Defaulter sets what the schema cannot default because it is a policy of the operator's:
// the tier.
type Defaulter struct{}

// Default gives app the free tier when it has none.
func (Defaulter) Default(_ context.Context, app *demov1.EchoApp) error {
	if app.Spec.Tier == "" {
		app.Spec.Tier = demov1.TierFree
	}
	return nil
}

// Validator refuses what the schema cannot express.
type Validator struct{}

// ValidateCreate checks a new EchoApp.
func (Validator) ValidateCreate(_ context.Context, app *demov1.EchoApp) (admission.Warnings, error) {
	return nil, validate(app)
}

// ValidateUpdate checks the EchoApp as it would be after the update.
func (Validator) ValidateUpdate(_ context.Context, _, app *demov1.EchoApp) (admission.Warnings, error) {
	return nil, validate(app)
}

// ValidateDelete allows every delete.
func (Validator) ValidateDelete(context.Context, *demov1.EchoApp) (admission.Warnings, error) {
	return nil, nil
}

// validate returns an Invalid status naming the field, which the apiserver passes on to the
// user after `admission webhook "..." denied the request:`.
func validate(app *demov1.EchoApp) error {
	var errs field.ErrorList
	if forbidden.MatchString(app.Spec.Message) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "message"), app.Spec.Message,
			fmt.Sprintf("must not contain the word %q", ForbiddenWord)))
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(demov1.GroupVersion.WithKind("EchoApp").GroupKind(), app.Name, errs)
}
