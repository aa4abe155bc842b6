package quota

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podResources are the quota resources pods use, besides huge pages and extended resources.
var podResources = []corev1.ResourceName{
	"count/pods",
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods,
}

// explicitResources are those that, when a quota tracks them, every container must state: a
// rule Kubernetes keeps for compatibility, for cpu and memory only.
var explicitResources = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// pods charge their object count always, and while they run (not Succeeded or Failed, not
// past their deletion's grace period) "pods" and what their containers request and limit.
type pods struct{}

func (pods) GroupResource() schema.GroupResource { return schema.GroupResource{Resource: "pods"} }
func (pods) ChargesUpdates() bool                { return false }

func (pods) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	out := Intersection(names, podResources)
	for _, n := range names {
		s := string(n)
		hugePages := strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix)
		extended := !isNative(n) && strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
		if (hugePages || extended) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (pods) MatchesScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pod, err := asPod(obj)
	if err != nil {
		return false, err
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return BestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !BestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		return selectorMatches(sel, pod.Spec.PriorityClassName)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

// Constraints: when a quota tracks cpu or memory, each container must request (or limit)
// them, as Kubernetes requires.
func (pods) Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	pod, err := asPod(obj)
	if err != nil {
		return err
	}
	wanted := Intersection(required, explicitResources)
	missing := map[corev1.ResourceName][]string{}
	check := func(c *corev1.Container) {
		has := computeUsage(c.Resources.Requests, c.Resources.Limits)
		for _, n := range wanted {
			if _, ok := has[n]; !ok && !slices.Contains(missing[n], c.Name) {
				missing[n] = append(missing[n], c.Name)
			}
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		containers := missing[corev1.ResourceName(n)]
		sort.Strings(containers)
		parts[i] = n + " for: " + strings.Join(containers, ",")
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

func (pods) Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	pod, err := asPod(obj)
	if err != nil {
		return nil, err
	}
	// count/pods counts every stored pod; "pods" and compute only running ones.
	out := corev1.ResourceList{"count/pods": one()}
	if !Running(pod, now) {
		return out, nil
	}
	opts := resourcehelper.PodResourcesOptions{}
	return Add(out, computeUsage(resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts))), nil
}

// Running reports whether pod's compute resources count: it has not finished (Succeeded or
// Failed), nor outlived the grace period of its deletion (a pod stuck on a lost node).
func Running(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if end, ok := GraceEnd(pod); ok && now.After(end) {
		return false
	}
	return true
}

// GraceEnd is when the grace period of pod's deletion ends, if it is being deleted.
func GraceEnd(pod *corev1.Pod) (time.Time, bool) {
	if pod.DeletionTimestamp == nil || pod.DeletionGracePeriodSeconds == nil {
		return time.Time{}, false
	}
	return pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second), true
}

// computeUsage is what requests and limits charge: requests as cpu, requests.cpu (and the
// same for memory and ephemeral storage), limits as limits.*, huge pages and extended
// resources as requests.*.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one()}
	for _, r := range []struct{ name, request, limit corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			out[r.name] = q.DeepCopy()
			out[r.request] = q.DeepCopy()
		}
		if q, ok := limits[r.name]; ok {
			out[r.limit] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			out[name] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
		if extendedResource(name) {
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
	}
	return out
}

// extendedResource reports whether a container resource is an extended one (outside
// kubernetes.io, such as nvidia.com/gpu), which quotas count as requests.<name>.
func extendedResource(name corev1.ResourceName) bool {
	return !isNative(name) && !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

// BestEffort reports whether pod is of the BestEffort QoS class: no container, and not the
// pod itself, requests or limits cpu or memory.
func BestEffort(pod *corev1.Pod) bool {
	stated := func(list corev1.ResourceList) bool {
		for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list[n]; ok && !q.IsZero() {
				return true
			}
		}
		return false
	}
	if r := pod.Spec.Resources; r != nil && (stated(r.Requests) || stated(r.Limits)) {
		return false
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if stated(cs[i].Resources.Requests) || stated(cs[i].Resources.Limits) {
				return false
			}
		}
	}
	return true
}

// terminating: the pod has an active deadline, so it ends by itself.
func terminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// crossNamespaceAffinity: a pod (anti-)affinity term of pod reaches other namespaces.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []*corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}

func asPod(obj runtime.Object) (*corev1.Pod, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("quota: expected a pod, got %T", obj)
	}
	return pod, nil
}
