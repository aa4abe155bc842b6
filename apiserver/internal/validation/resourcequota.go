package validation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ResourceQuota is how ResourceQuotas are validated, as Kubernetes does: standard or fully
// qualified resource names, non-negative quantities (whole numbers for object counts), scopes
// that suit the resources they limit, and scopes that never change.
var ResourceQuota = Rules[*corev1.ResourceQuota]{Spec: validateResourceQuota, Update: validateResourceQuotaUpdate}

// standardResources are the unqualified resource names Kubernetes knows.
var standardResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceStorage, corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

// standardQuotaResources are the unqualified names a quota may limit.
var standardQuotaResources = slices.DeleteFunc(slices.Clone(standardResources), func(n corev1.ResourceName) bool { return n == corev1.ResourceStorage })

// integerResources are counted in whole objects.
var integerResources = []corev1.ResourceName{
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

var standardScopes = []corev1.ResourceQuotaScope{
	corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
	corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
	corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
	corev1.ResourceQuotaScopeVolumeAttributesClass,
}

// conflictingScopes may not be asked for together.
var conflictingScopes = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	sp := field.NewPath("spec")
	allErrs := quotaResources(q.Spec.Hard, sp.Child("hard"))
	allErrs = append(allErrs, quotaScopes(&q.Spec, sp)...)
	allErrs = append(allErrs, quotaScopeSelector(&q.Spec, sp)...)
	st := field.NewPath("status")
	allErrs = append(allErrs, quotaResources(q.Status.Hard, st.Child("hard"))...)
	return append(allErrs, quotaResources(q.Status.Used, st.Child("used"))...)
}

func validateResourceQuotaUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	scopes := func(list []corev1.ResourceQuotaScope) []corev1.ResourceQuotaScope {
		s := slices.Clone(list)
		slices.Sort(s)
		return slices.Compact(s)
	}
	if !slices.Equal(scopes(q.Spec.Scopes), scopes(old.Spec.Scopes)) {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, "field is immutable")}
	}
	return nil
}

func quotaResources(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range sortedKeys(list) {
		p := fldPath.Key(string(name))
		allErrs = append(allErrs, quotaResourceName(name, p)...)
		allErrs = append(allErrs, resourceQuantity(name, list[name], p)...)
	}
	return allErrs
}

// quotaResourceName: a standard resource a quota may limit, or a fully qualified one
// (count/deployments.apps, requests.nvidia.com/gpu, gold.storageclass.storage.k8s.io/...).
func quotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := resourceName(name, fldPath)
	if !strings.Contains(string(name), "/") && !standardQuotaResource(name) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return allErrs
}

// resourceName: a qualified name, standard when unqualified.
func resourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if errs := nameErrs(fldPath, string(name), validation.IsQualifiedName); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(name), "/") && !slices.Contains(standardResources, name) && !quotaHugePages(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "must be a standard resource type or fully qualified")}
	}
	return nil
}

func standardQuotaResource(name corev1.ResourceName) bool {
	return slices.Contains(standardQuotaResources, name) || quotaHugePages(name)
}

func quotaHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix)
}

// resourceQuantity: never negative; whole for object counts and extended resources.
func resourceQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Sign() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), "must be greater than or equal to 0")}
	}
	if (slices.Contains(integerResources, name) || extendedResource(name)) && q.MilliValue()%1000 != 0 {
		return field.ErrorList{field.Invalid(fldPath, q.String(), "must be an integer")}
	}
	return nil
}

// extendedResource: a resource outside kubernetes.io (example.com/gpu), which containers ask
// for in whole units.
func extendedResource(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
	if native || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// scopeSuits reports whether scope may limit resource: pod scopes only pods and their compute
// resources (BestEffort only their number), VolumeAttributesClass only claims.
func scopeSuits(scope corev1.ResourceQuotaScope, res corev1.ResourceName) bool {
	podCount := res == corev1.ResourcePods
	podCompute := slices.Contains([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU,
		corev1.ResourceLimitsMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory}, res)
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCount || podCompute
	case corev1.ResourceQuotaScopeBestEffort:
		return podCount
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return res == corev1.ResourcePersistentVolumeClaims || res == corev1.ResourceRequestsStorage
	}
	return true
}

func quotaScopes(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	if len(spec.Scopes) == 0 {
		return nil
	}
	var allErrs field.ErrorList
	p := fldPath.Child("scopes")
	for _, scope := range spec.Scopes {
		if !slices.Contains(standardScopes, scope) {
			allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "unsupported scope"))
		}
		for _, res := range sortedKeys(spec.Hard) {
			if standardQuotaResource(res) && !scopeSuits(scope, res) {
				allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "unsupported scope applied to resource"))
			}
		}
	}
	if conflicting(spec.Scopes) {
		allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
	}
	return allErrs
}

func quotaScopeSelector(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	if spec.ScopeSelector == nil {
		return nil
	}
	var allErrs field.ErrorList
	p := fldPath.Child("scopeSelector", "matchExpressions")
	var scopes []corev1.ResourceQuotaScope
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !slices.Contains(standardScopes, req.ScopeName) {
			allErrs = append(allErrs, field.Invalid(p.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, res := range sortedKeys(spec.Hard) {
			if standardQuotaResource(res) && !scopeSuits(req.ScopeName, res) {
				allErrs = append(allErrs, field.Invalid(p, spec.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				allErrs = append(allErrs, field.Invalid(p.Child("operator"), req.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				allErrs = append(allErrs, field.Required(p.Child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("values"), req.Values, "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			allErrs = append(allErrs, field.Invalid(p.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes = append(scopes, req.ScopeName)
	}
	if conflicting(scopes) {
		allErrs = append(allErrs, field.Invalid(p, spec.Scopes, "conflicting scopes"))
	}
	return allErrs
}

func conflicting(scopes []corev1.ResourceQuotaScope) bool {
	for _, pair := range conflictingScopes {
		if slices.Contains(scopes, pair[0]) && slices.Contains(scopes, pair[1]) {
			return true
		}
	}
	return false
}

// LimitRange is how LimitRanges are validated, as Kubernetes does: one item per type, resource
// names a container (or claim) may use, and min <= defaultRequest <= default <= max, with a
// maxLimitRequestRatio of at least 1 that max/min allows.
var LimitRange = Rules[*corev1.LimitRange]{Spec: validateLimitRange}

var limitTypes = []corev1.LimitType{corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("spec", "limits")
	seen := map[corev1.LimitType]bool{}
	for i := range lr.Spec.Limits {
		idx := fldPath.Index(i)
		item := &lr.Spec.Limits[i]
		allErrs = append(allErrs, limitType(item.Type, idx.Child("type"))...)
		if seen[item.Type] {
			allErrs = append(allErrs, field.Duplicate(idx.Child("type"), item.Type))
		}
		seen[item.Type] = true

		names := map[corev1.ResourceName]bool{}
		note := func(list corev1.ResourceList, child string) {
			for _, name := range sortedKeys(list) {
				allErrs = append(allErrs, limitResourceName(item.Type, name, idx.Child(child).Key(string(name)))...)
				names[name] = true
			}
		}
		note(item.Max, "max")
		note(item.Min, "min")
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				allErrs = append(allErrs, field.Forbidden(idx.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				allErrs = append(allErrs, field.Forbidden(idx.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			note(item.Default, "default")
			note(item.DefaultRequest, "defaultRequest")
		}
		if item.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := item.Min[corev1.ResourceStorage]
			_, hasMax := item.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				allErrs = append(allErrs, field.Required(idx.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		note(item.MaxLimitRequestRatio, "maxLimitRequestRatio")
		for _, name := range sortedKeys(names) {
			allErrs = append(allErrs, limitBounds(item, name, idx)...)
		}
	}
	return allErrs
}

// limitBounds checks that one resource's bounds of a LimitRange item are in order.
func limitBounds(item *corev1.LimitRangeItem, name corev1.ResourceName, idx *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	key := string(name)
	minQ, hasMin := item.Min[name]
	maxQ, hasMax := item.Max[name]
	def, hasDef := item.Default[name]
	defReq, hasDefReq := item.DefaultRequest[name]
	ratio, hasRatio := item.MaxLimitRequestRatio[name]
	if item.Type == corev1.LimitTypePod {
		hasDef, hasDefReq = false, false
	}
	if hasMin && hasMax && minQ.Cmp(maxQ) > 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("min").Key(key), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
	}
	if hasDefReq && hasMin && minQ.Cmp(defReq) > 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("min value %s is greater than default request value %s", minQ.String(), defReq.String())))
	}
	if hasDefReq && hasMax && defReq.Cmp(maxQ) > 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("default request value %s is greater than max value %s", defReq.String(), maxQ.String())))
	}
	if hasDefReq && hasDef && defReq.Cmp(def) > 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", defReq.String(), def.String())))
	}
	if hasDef && hasMin && minQ.Cmp(def) > 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("default").Key(key), minQ.String(), fmt.Sprintf("min value %s is greater than default value %s", minQ.String(), def.String())))
	}
	if hasDef && hasMax && def.Cmp(maxQ) > 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("default").Key(key), maxQ.String(), fmt.Sprintf("default value %s is greater than max value %s", def.String(), maxQ.String())))
	}
	if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("maxLimitRequestRatio").Key(key), ratio.String(), fmt.Sprintf("ratio %s is less than 1", ratio.String())))
	}
	if hasRatio && hasMin && hasMax {
		r, lo, hi := float64(ratio.Value()), minQ.Value(), maxQ.Value()
		if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
			r, lo, hi = float64(ratio.MilliValue())/1000, minQ.MilliValue(), maxQ.MilliValue()
		}
		if limit := float64(hi) / float64(lo); r > limit {
			allErrs = append(allErrs, field.Invalid(idx.Child("maxLimitRequestRatio").Key(key), ratio.String(), fmt.Sprintf("ratio %s is greater than max/min = %f", ratio.String(), limit)))
		}
	}
	// Resources that cannot be overcommitted (huge pages, extended ones) take their default
	// request from their default limit.
	if !overcommitAllowed(name) && hasDef && hasDefReq && def.Cmp(defReq) != 0 {
		allErrs = append(allErrs, field.Invalid(idx.Child("defaultRequest").Key(key), defReq.String(), fmt.Sprintf("default value %s must equal to defaultRequest value %s in %s", def.String(), defReq.String(), key)))
	}
	return allErrs
}

func overcommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
}

func limitType(t corev1.LimitType, fldPath *field.Path) field.ErrorList {
	if errs := nameErrs(fldPath, string(t), validation.IsQualifiedName); len(errs) > 0 {
		return errs
	}
	if !strings.Contains(string(t), "/") && !slices.Contains(limitTypes, t) {
		return field.ErrorList{field.Invalid(fldPath, t, "must be a standard limit type or fully qualified")}
	}
	return nil
}

// limitResourceName: what a container may ask for in Pod and Container items (cpu, memory,
// ephemeral-storage, huge pages, extended resources); any resource name otherwise.
func limitResourceName(t corev1.LimitType, name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	allErrs := resourceName(name, fldPath)
	if t != corev1.LimitTypePod && t != corev1.LimitTypeContainer {
		return allErrs
	}
	s := string(name)
	switch {
	case !strings.Contains(s, "/"):
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) {
			allErrs = append(allErrs, field.Invalid(fldPath, name, "must be a standard resource for containers"))
		}
	case !strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) && !extendedResource(name):
		allErrs = append(allErrs, field.Invalid(fldPath, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}
