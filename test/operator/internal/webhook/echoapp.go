package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
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
	mgr.GetWebhookServer().Register(MutatePath, &admission.Webhook{Handler: Mutator{}})
	return ctrl.NewWebhookManagedBy(mgr, &demov1.EchoApp{}).
		WithValidator(Validator{}).
		Complete()
}

// Mutator sets what the schema cannot default because it is a policy of the operator's:
// the tier. It reads the object as plain JSON, not as the Go type: mutating webhooks run
// before the apiserver checks the schema, and an object the Go type cannot hold (replicas:
// "two") must reach that check and its 422 naming the field, not fail here to decode.
type Mutator struct{}

// Handle answers with a JSONPatch adding spec.tier: free when the tier is absent or empty.
func (Mutator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	var obj struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil || obj.Spec == nil {
		// No spec object: the schema refuses it.
		return admission.Allowed("")
	}
	if tier, ok := obj.Spec["tier"]; ok {
		var s string
		if json.Unmarshal(tier, &s) != nil || s != "" {
			// Set, or not a string for the schema to refuse.
			return admission.Allowed("")
		}
	}
	// "add" replaces a member that is there (an empty tier) and adds one that is not.
	return admission.Patched("", jsonpatch.NewOperation("add", "/spec/tier", demov1.TierFree))
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
