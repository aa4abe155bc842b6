package webhook

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// hook is one webhook of either kind, with its selectors parsed.
type hook struct {
	name         string
	config       string
	clientConfig admissionregistrationv1.WebhookClientConfig
	rules        []admissionregistrationv1.RuleWithOperations
	failOpen     bool
	exact        bool
	nsSelector   labels.Selector
	objSelector  labels.Selector
	sideEffects  *admissionregistrationv1.SideEffectClass
	timeout      time.Duration
	// reinvoke is a mutating webhook's reinvocationPolicy IfNeeded.
	reinvoke bool
	// matcher evaluates the matchConditions; nil when there are none.
	matcher matchconditions.Matcher
}

// newHook builds a hook from the fields both kinds share; the configuration was defaulted
// when stored, but a missing default is taken as Kubernetes' anyway.
func newHook(config, name string, cc admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations,
	failure *admissionregistrationv1.FailurePolicyType, match *admissionregistrationv1.MatchPolicyType, nsSel, objSel *metav1.LabelSelector,
	side *admissionregistrationv1.SideEffectClass, timeout *int32) (*hook, error) {
	h := &hook{name: name, config: config, clientConfig: cc, rules: rules, sideEffects: side, timeout: 10 * time.Second,
		failOpen: failure != nil && *failure == admissionregistrationv1.Ignore,
		exact:    match != nil && *match == admissionregistrationv1.Exact}
	if timeout != nil {
		h.timeout = time.Duration(*timeout) * time.Second
	}
	var err error
	if h.nsSelector, err = selector(nsSel); err != nil {
		return nil, fmt.Errorf("webhook %s namespaceSelector: %w", name, err)
	}
	if h.objSelector, err = selector(objSel); err != nil {
		return nil, fmt.Errorf("webhook %s objectSelector: %w", name, err)
	}
	return h, nil
}

func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// exempt reports whether a write is never shown to webhooks: one of the webhook
// configurations themselves, so that a broken webhook can always be removed, as upstream.
func exempt(a *Attributes) bool {
	return a.Resource.Group == admissionregistrationv1.GroupName &&
		(a.Resource.Resource == "validatingwebhookconfigurations" || a.Resource.Resource == "mutatingwebhookconfigurations")
}

// matchesRules reports whether one of h's rules covers the write. An Exact hook must name the
// resource as the request did; an Equivalent one may also name it as it is stored (the only
// equivalent resources minik8s serves are the other versions of scheme.OtherVersions).
func (h *hook) matchesRules(a *Attributes) bool {
	for i := range h.rules {
		r := &h.rules[i]
		if ruleMatches(r, a.Operation, a.RequestResource, a.Subresource, a.Namespaced) {
			return true
		}
		if !h.exact && a.Resource != a.RequestResource && ruleMatches(r, a.Operation, a.Resource, a.Subresource, a.Namespaced) {
			return true
		}
	}
	return false
}

// ruleMatches is Kubernetes' rule matcher: operation, group, version and resource each match
// the rule's list or its "*"; resources are "res", "res/sub", "res/*" (res and each of its
// subresources), "*/sub", "*" (every resource, no subresource) or "*/*"; the scope Cluster
// or Namespaced says which kind of resource.
func ruleMatches(r *admissionregistrationv1.RuleWithOperations, op admissionv1.Operation, gvr schema.GroupVersionResource, sub string, namespaced bool) bool {
	opOK := false
	for _, o := range r.Operations {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			opOK = true
			break
		}
	}
	if !opOK || !anyOrContains(r.APIGroups, gvr.Group) || !anyOrContains(r.APIVersions, gvr.Version) {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.NamespacedScope:
			if !namespaced {
				return false
			}
		case admissionregistrationv1.ClusterScope:
			if namespaced {
				return false
			}
		}
	}
	for _, rs := range r.Resources {
		res, rsub, _ := strings.Cut(rs, "/")
		if (res == "*" || res == gvr.Resource) && (rsub == "*" || rsub == sub) {
			return true
		}
	}
	return false
}

func anyOrContains(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

// namespaceLabels finds the labels of a write's namespace, for namespaceSelectors.
type namespaceLabels func(ctx context.Context, name string) (labels.Set, error)

// matchesNamespace reports whether the write's namespace is one h's namespaceSelector picks.
// Cluster-scoped objects other than Namespaces always match; a Namespace is judged by its
// own labels (the stored ones for a delete), as upstream.
func (h *hook) matchesNamespace(ctx context.Context, a *Attributes, nsLabels namespaceLabels) (bool, error) {
	if h.nsSelector.Empty() {
		return true, nil
	}
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		obj := a.Object
		if a.Operation == admissionv1.Delete || obj == nil {
			obj = a.OldObject
		}
		return h.nsSelector.Matches(labelsOf(obj)), nil
	}
	if a.Namespace == "" {
		return true, nil
	}
	set, err := nsLabels(ctx, a.Namespace)
	if err != nil {
		return false, err
	}
	return h.nsSelector.Matches(set), nil
}

// matchesObject reports whether h's objectSelector picks the new or the old object.
func (h *hook) matchesObject(a *Attributes) bool {
	if h.objSelector.Empty() {
		return true
	}
	return (a.Object != nil && h.objSelector.Matches(labelsOf(a.Object))) ||
		(a.OldObject != nil && h.objSelector.Matches(labelsOf(a.OldObject)))
}

func labelsOf(obj runtime.Object) labels.Set {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m.GetLabels()
}

// matches reports whether h is called about the write: its rules, objectSelector,
// namespaceSelector, then its matchConditions, as upstream checks them.
func (h *hook) matches(ctx context.Context, a *Attributes, nsLabels namespaceLabels, authz authorizer.UnconditionalAuthorizer) (bool, error) {
	if !h.matchesRules(a) || !h.matchesObject(a) {
		return false, nil
	}
	if ok, err := h.matchesNamespace(ctx, a, nsLabels); !ok || err != nil {
		return false, err
	}
	return h.matchesConditions(ctx, a, authz)
}
