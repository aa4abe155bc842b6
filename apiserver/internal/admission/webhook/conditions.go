package webhook

import (
	"context"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"

	"minik8s.io/shared/apierror"
)

// maxMatchConditions is how many matchConditions a webhook may have, as in Kubernetes.
const maxMatchConditions = 64

// conditionVariables are the variables matchConditions see: object, oldObject, request and
// authorizer (no params), as upstream declares them for webhooks.
var conditionVariables = plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}

// celCompiler is Kubernetes' CEL environment for admission expressions, built once: building
// it costs tens of milliseconds.
var celCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// ValidateMatchConditions checks a webhook's matchConditions as Kubernetes does when a
// configuration is written: at most 64, each with a qualified name unique in the webhook and
// an expression that compiles to a bool.
func ValidateMatchConditions(conds []admissionregistrationv1.MatchCondition, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(fp, len(conds), maxMatchConditions))
	}
	seen := map[string]bool{}
	for i, c := range conds {
		p := fp.Index(i)
		if expr := strings.TrimSpace(c.Expression); expr == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		} else {
			res := celCompiler().CompileCELExpression(&matchconditions.MatchCondition{Name: c.Name, Expression: expr}, conditionVariables, environment.NewExpressions)
			if res.Error != nil {
				errs = append(errs, field.Invalid(p.Child("expression"), c.Expression, res.Error.Detail))
			}
		}
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if seen[c.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			seen[c.Name] = true
		}
	}
	return errs
}

// newMatcher compiles a webhook's matchConditions; nil when it has none.
func newMatcher(conds []admissionregistrationv1.MatchCondition, failure *admissionregistrationv1.FailurePolicyType, typ, name string) matchconditions.Matcher {
	if len(conds) == 0 {
		return nil
	}
	results := make([]plugincel.CompilationResult, len(conds))
	for i, c := range conds {
		results[i] = celCompiler().CompileCELExpression(&matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression}, conditionVariables, environment.StoredExpressions)
	}
	return matchconditions.NewMatcher(plugincel.NewCondition(results), failure, "webhook", typ, name)
}

// matchesConditions evaluates h's matchConditions on the write: false when one is false (or,
// under failurePolicy Ignore, when one fails to evaluate); an error, which refuses the write,
// when one fails to evaluate under Fail.
func (h *hook) matchesConditions(ctx context.Context, a *Attributes, authz authorizer.UnconditionalAuthorizer) (bool, error) {
	if h.matcher == nil {
		return true, nil
	}
	info := &user.DefaultInfo{Name: a.User.Username, UID: a.User.UID, Groups: a.User.Groups}
	if len(a.User.Extra) > 0 {
		info.Extra = map[string][]string{}
		for k, v := range a.User.Extra {
			info.Extra[k] = v
		}
	}
	attrs := admission.NewAttributesRecord(a.Object, a.OldObject, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		admission.Operation(a.Operation), nil, a.DryRun, info)
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedObject: admission.NewLazyObject(a.Object),
		VersionedOldObject: admission.NewLazyObject(a.OldObject), VersionedKind: a.Kind}
	res := h.matcher.Match(ctx, va, nil, authz)
	if res.Error != nil {
		return false, forbidden(a, res.Error)
	}
	return res.Matches, nil
}

// forbidden is upstream's answer when a matchCondition fails to evaluate under Fail: 403, the
// resource and name, and the evaluation errors.
func forbidden(a *Attributes, err error) error {
	return apierror.Forbidden(a.Resource.Group, a.Resource.Resource, a.Name, err.Error())
}
