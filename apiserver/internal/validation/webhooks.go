package validation

import (
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	admissionwebhook "minik8s.io/apiserver/internal/admission/webhook"
)

// ValidatingWebhookConfiguration and MutatingWebhookConfiguration are validated as Kubernetes'
// admissionregistration validation holds v1 objects to: every webhook a fully qualified name,
// unique within its configuration, declaring no side effects (or none on dry run), accepting
// the v1 or v1beta1 AdmissionReview, reached at exactly one of an https URL or a Service, with
// valid rules, selectors and a timeout of 1 to 30 seconds. Kubernetes relaxes some of these
// on update for objects stored before they applied; minik8s never stored such objects.
var (
	ValidatingWebhookConfiguration = Rules[*admissionregistrationv1.ValidatingWebhookConfiguration]{Name: dnsSubdomain, Spec: validateValidatingWebhooks}
	MutatingWebhookConfiguration   = Rules[*admissionregistrationv1.MutatingWebhookConfiguration]{Name: dnsSubdomain, Spec: validateMutatingWebhooks}
)

// acceptedReviewVersions are the AdmissionReview versions a webhook must accept one of.
var acceptedReviewVersions = []string{"v1", "v1beta1"}

var (
	failurePolicies      = []admissionregistrationv1.FailurePolicyType{admissionregistrationv1.Fail, admissionregistrationv1.Ignore}
	matchPolicies        = []admissionregistrationv1.MatchPolicyType{admissionregistrationv1.Equivalent, admissionregistrationv1.Exact}
	noSideEffects        = []admissionregistrationv1.SideEffectClass{admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.SideEffectClassNoneOnDryRun}
	reinvocationPolicies = []admissionregistrationv1.ReinvocationPolicyType{admissionregistrationv1.IfNeededReinvocationPolicy, admissionregistrationv1.NeverReinvocationPolicy}
	webhookOperations    = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll, admissionregistrationv1.Connect,
		admissionregistrationv1.Create, admissionregistrationv1.Delete, admissionregistrationv1.Update}
	ruleScopes = []admissionregistrationv1.ScopeType{admissionregistrationv1.AllScopes, admissionregistrationv1.ClusterScope, admissionregistrationv1.NamespacedScope}
)

// webhook is what both kinds of webhook share, for one validation.
type webhook struct {
	name            string
	clientConfig    admissionregistrationv1.WebhookClientConfig
	rules           []admissionregistrationv1.RuleWithOperations
	failurePolicy   *admissionregistrationv1.FailurePolicyType
	matchPolicy     *admissionregistrationv1.MatchPolicyType
	nsSelector      *metav1.LabelSelector
	objSelector     *metav1.LabelSelector
	sideEffects     *admissionregistrationv1.SideEffectClass
	timeoutSeconds  *int32
	reviewVersions  []string
	matchConditions []admissionregistrationv1.MatchCondition
}

func validateValidatingWebhooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
	hooks := make([]webhook, len(c.Webhooks))
	for i, h := range c.Webhooks {
		hooks[i] = webhook{h.Name, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector, h.ObjectSelector,
			h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions}
	}
	return validateWebhooks(hooks)
}

func validateMutatingWebhooks(c *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
	hooks := make([]webhook, len(c.Webhooks))
	for i, h := range c.Webhooks {
		hooks[i] = webhook{h.Name, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector, h.ObjectSelector,
			h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions}
	}
	allErrs := validateWebhooks(hooks)
	for i, h := range c.Webhooks {
		if p := h.ReinvocationPolicy; p != nil && !contains(reinvocationPolicies, *p) {
			allErrs = append(allErrs, field.NotSupported(field.NewPath("webhooks").Index(i).Child("reinvocationPolicy"), *p, reinvocationPolicies))
		}
	}
	return allErrs
}

func validateWebhooks(hooks []webhook) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[string]bool{}
	for i, h := range hooks {
		fp := field.NewPath("webhooks").Index(i)
		allErrs = append(allErrs, validateWebhook(h, fp)...)
		if h.name != "" {
			if seen[h.name] {
				allErrs = append(allErrs, field.Duplicate(fp.Child("name"), h.name))
			}
			seen[h.name] = true
		}
	}
	return allErrs
}

func validateWebhook(h webhook, fp *field.Path) field.ErrorList {
	allErrs := validation.IsFullyQualifiedName(fp.Child("name"), h.name)
	for i := range h.rules {
		allErrs = append(allErrs, validateWebhookRule(&h.rules[i], fp.Child("rules").Index(i))...)
	}
	if p := h.failurePolicy; p != nil && !contains(failurePolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(fp.Child("failurePolicy"), *p, failurePolicies))
	}
	if p := h.matchPolicy; p != nil && !contains(matchPolicies, *p) {
		allErrs = append(allErrs, field.NotSupported(fp.Child("matchPolicy"), *p, matchPolicies))
	}
	switch {
	case h.sideEffects == nil:
		allErrs = append(allErrs, field.Required(fp.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	case !contains(noSideEffects, *h.sideEffects):
		allErrs = append(allErrs, field.NotSupported(fp.Child("sideEffects"), *h.sideEffects, noSideEffects))
	}
	if t := h.timeoutSeconds; t != nil && (*t < 1 || *t > 30) {
		allErrs = append(allErrs, field.Invalid(fp.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	if h.nsSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(h.nsSelector, opts, fp.Child("namespaceSelector"))...)
	}
	if h.objSelector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(h.objSelector, opts, fp.Child("objectSelector"))...)
	}
	cc, ccp := h.clientConfig, fp.Child("clientConfig")
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		allErrs = append(allErrs, field.Required(ccp, "exactly one of url or service is required"))
	case cc.URL != nil:
		allErrs = append(allErrs, validateWebhookURL(ccp.Child("url"), *cc.URL)...)
	default:
		allErrs = append(allErrs, validateWebhookService(ccp.Child("service"), cc.Service)...)
	}
	allErrs = append(allErrs, admissionwebhook.ValidateMatchConditions(h.matchConditions, fp.Child("matchConditions"))...)
	return append(allErrs, validateReviewVersions(h.reviewVersions, fp.Child("admissionReviewVersions"))...)
}

func validateReviewVersions(versions []string, fp *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(fp, "must specify one of "+strings.Join(acceptedReviewVersions, ", "))}
	}
	var allErrs field.ErrorList
	seen, accepted := map[string]bool{}, false
	for i, v := range versions {
		if seen[v] {
			allErrs = append(allErrs, field.Invalid(fp.Index(i), v, "duplicate version"))
			continue
		}
		seen[v] = true
		allErrs = append(allErrs, nameErrs(fp.Index(i), v, validation.IsDNS1035Label)...)
		accepted = accepted || contains(acceptedReviewVersions, v)
	}
	if !accepted {
		allErrs = append(allErrs, field.Invalid(fp, versions, "must include at least one of "+strings.Join(acceptedReviewVersions, ", ")))
	}
	return allErrs
}

func validateWebhookRule(r *admissionregistrationv1.RuleWithOperations, fp *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ops := fp.Child("operations")
	if len(r.Operations) == 0 {
		allErrs = append(allErrs, field.Required(ops, ""))
	}
	if len(r.Operations) > 1 && contains(r.Operations, admissionregistrationv1.OperationAll) {
		allErrs = append(allErrs, field.Invalid(ops, r.Operations, "if '*' is present, must not specify other operations"))
	}
	for i, op := range r.Operations {
		if !contains(webhookOperations, op) {
			allErrs = append(allErrs, field.NotSupported(ops.Index(i), op, webhookOperations))
		}
	}
	if len(r.APIGroups) == 0 {
		allErrs = append(allErrs, field.Required(fp.Child("apiGroups"), ""))
	}
	if len(r.APIGroups) > 1 && contains(r.APIGroups, "*") {
		allErrs = append(allErrs, field.Invalid(fp.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other API groups"))
	}
	// The core group is the empty string, so groups may be empty; versions may not.
	if len(r.APIVersions) == 0 {
		allErrs = append(allErrs, field.Required(fp.Child("apiVersions"), ""))
	}
	if len(r.APIVersions) > 1 && contains(r.APIVersions, "*") {
		allErrs = append(allErrs, field.Invalid(fp.Child("apiVersions"), r.APIVersions, "if '*' is present, must not specify other API versions"))
	}
	for i, v := range r.APIVersions {
		if v == "" {
			allErrs = append(allErrs, field.Required(fp.Child("apiVersions").Index(i), ""))
		}
	}
	allErrs = append(allErrs, validateRuleResources(r.Resources, fp.Child("resources"))...)
	if s := r.Scope; s != nil && !contains(ruleScopes, *s) {
		allErrs = append(allErrs, field.NotSupported(fp.Child("scope"), *s, ruleScopes))
	}
	return allErrs
}

// validateRuleResources refuses resources that overlap their own wildcards: "*/*" with
// anything, "*" with a plain resource, "x/*" with "x/y", "*/y" with "x/y".
func validateRuleResources(resources []string, fp *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(resources) == 0 {
		allErrs = append(allErrs, field.Required(fp, ""))
	}
	anySub, anyRes := map[string]bool{}, map[string]bool{}
	all, star, plain := false, false, false
	for i, rs := range resources {
		if rs == "" {
			allErrs = append(allErrs, field.Required(fp.Index(i), ""))
			continue
		}
		all = all || rs == "*/*"
		star = star || rs == "*"
		res, sub, hasSub := strings.Cut(rs, "/")
		if !hasSub {
			plain = plain || rs != "*"
			continue
		}
		if anySub[res] {
			allErrs = append(allErrs, field.Invalid(fp.Index(i), rs, fmt.Sprintf("if '%s/*' is present, must not specify %s", res, rs)))
		}
		if anyRes[sub] {
			allErrs = append(allErrs, field.Invalid(fp.Index(i), rs, fmt.Sprintf("if '*/%s' is present, must not specify %s", sub, rs)))
		}
		if sub == "*" {
			anySub[res] = true
		}
		if res == "*" {
			anyRes[sub] = true
		}
	}
	if len(resources) > 1 && all {
		allErrs = append(allErrs, field.Invalid(fp, resources, "if '*/*' is present, must not specify other resources"))
	}
	if star && plain {
		allErrs = append(allErrs, field.Invalid(fp, resources, "if '*' is present, must not specify other resources without subresources"))
	}
	return allErrs
}

const webhookURLForm = "; desired format: https://host[/path]"

// validateWebhookURL holds a webhook's URL to https with a host and without user, query or
// fragment, as Kubernetes does.
func validateWebhookURL(fp *field.Path, raw string) field.ErrorList {
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Required(fp, "url must be a valid URL: "+err.Error()+webhookURLForm)}
	}
	var allErrs field.ErrorList
	if u.Scheme != "https" {
		allErrs = append(allErrs, field.Invalid(fp, u.Scheme, "'https' is the only allowed URL scheme"+webhookURLForm))
	}
	if u.Host == "" {
		allErrs = append(allErrs, field.Invalid(fp, u.Host, "host must be specified"+webhookURLForm))
	}
	if u.User != nil {
		allErrs = append(allErrs, field.Invalid(fp, u.User.String(), "user information is not permitted in the URL"))
	}
	if u.Fragment != "" {
		allErrs = append(allErrs, field.Invalid(fp, u.Fragment, "fragments are not permitted in the URL"))
	}
	if u.RawQuery != "" {
		allErrs = append(allErrs, field.Invalid(fp, u.RawQuery, "query parameters are not permitted in the URL"))
	}
	return allErrs
}

// validateWebhookService holds a Service reference to a name, a namespace, a valid port and a
// path of DNS-subdomain segments.
func validateWebhookService(fp *field.Path, s *admissionregistrationv1.ServiceReference) field.ErrorList {
	var allErrs field.ErrorList
	if s.Name == "" {
		allErrs = append(allErrs, field.Required(fp.Child("name"), "service name is required"))
	}
	if s.Namespace == "" {
		allErrs = append(allErrs, field.Required(fp.Child("namespace"), "service namespace is required"))
	}
	if s.Port != nil {
		if msgs := validation.IsValidPortNum(int(*s.Port)); len(msgs) > 0 {
			allErrs = append(allErrs, field.Invalid(fp.Child("port"), *s.Port, "port is not valid: "+strings.Join(msgs, ", ")))
		}
	}
	if s.Path == nil || *s.Path == "" || *s.Path == "/" {
		return allErrs
	}
	p, pp := *s.Path, fp.Child("path")
	if p == "//" {
		return append(allErrs, field.Invalid(pp, p, "segment[0] may not be empty"))
	}
	if !strings.HasPrefix(p, "/") {
		allErrs = append(allErrs, field.Invalid(pp, p, "must start with a '/'"))
	}
	rest := strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
	for i, seg := range strings.Split(rest, "/") {
		if seg == "" {
			allErrs = append(allErrs, field.Invalid(pp, p, fmt.Sprintf("segment[%d] may not be empty", i)))
			continue
		}
		for _, msg := range validation.IsDNS1123Subdomain(seg) {
			allErrs = append(allErrs, field.Invalid(pp, p, fmt.Sprintf("segment[%d]: %v", i, msg)))
		}
	}
	return allErrs
}
