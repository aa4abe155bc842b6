package limitranger

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"minik8s.io/shared/quota"
)

// Annotation records on a pod which defaults LimitRanges gave its containers.
const Annotation = "kubernetes.io/limit-ranger"

// Default fills into each container of pod the default requests and limits of the Container
// items of ranges that it lacks, and says so in the pod's Annotation.
func Default(pod *corev1.Pod, ranges []*corev1.LimitRange) {
	for _, lr := range sorted(ranges) {
		requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			for name, q := range item.DefaultRequest {
				requests[name] = q.DeepCopy()
			}
			for name, q := range item.Default {
				limits[name] = q.DeepCopy()
			}
		}
		var notes []string
		for i := range pod.Spec.Containers {
			notes = fill(&pod.Spec.Containers[i], requests, limits, "container", notes)
		}
		for i := range pod.Spec.InitContainers {
			notes = fill(&pod.Spec.InitContainers[i], requests, limits, "init container", notes)
		}
		if len(notes) > 0 {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[Annotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
		}
	}
}

// fill gives c the requests and limits it lacks and notes, as Kubernetes words it, what it
// set: "cpu, memory request for container app".
func fill(c *corev1.Container, requests, limits corev1.ResourceList, what string, notes []string) []string {
	set := func(dst *corev1.ResourceList, src corev1.ResourceList) []string {
		var names []string
		for name, q := range src {
			if _, ok := (*dst)[name]; ok {
				continue
			}
			if *dst == nil {
				*dst = corev1.ResourceList{}
			}
			(*dst)[name] = q.DeepCopy()
			names = append(names, string(name))
		}
		sort.Strings(names)
		return names
	}
	if r := set(&c.Resources.Requests, requests); len(r) > 0 {
		notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(r, ", "), what, c.Name))
	}
	if l := set(&c.Resources.Limits, limits); len(l) > 0 {
		notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(l, ", "), what, c.Name))
	}
	return notes
}

// ValidatePod refuses a pod whose containers (Container items) or whole (Pod items) fall
// outside a LimitRange's min, max or maxLimitRequestRatio: the first range it breaks, with
// every reason, as the message of a 403.
func ValidatePod(pod *corev1.Pod, ranges []*corev1.LimitRange) error {
	for _, lr := range sorted(ranges) {
		var errs []error
		for _, item := range lr.Spec.Limits {
			switch item.Type {
			case corev1.LimitTypeContainer:
				for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
					for i := range cs {
						errs = append(errs, bounds(item, cs[i].Resources.Requests, cs[i].Resources.Limits)...)
					}
				}
			case corev1.LimitTypePod:
				errs = append(errs, bounds(item, podTotal(pod, requestsOf), podTotal(pod, limitsOf))...)
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			return err
		}
	}
	return nil
}

// ValidateClaim refuses a claim whose requested storage falls outside a PersistentVolumeClaim
// item's min or max.
func ValidateClaim(pvc *corev1.PersistentVolumeClaim, ranges []*corev1.LimitRange) error {
	for _, lr := range sorted(ranges) {
		var errs []error
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypePersistentVolumeClaim {
				continue
			}
			requests := pvc.Spec.Resources.Requests
			for _, name := range quota.ResourceNames(item.Min) {
				errs = appendErr(errs, minimum(string(item.Type), name, item.Min[name], requests, nil))
			}
			for _, name := range quota.ResourceNames(item.Max) {
				errs = appendErr(errs, maximumRequest(string(item.Type), name, item.Max[name], requests))
			}
		}
		if err := utilerrors.NewAggregate(errs); err != nil {
			return err
		}
	}
	return nil
}

// bounds checks one container's (or a pod's) requests and limits against an item.
func bounds(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	t := string(item.Type)
	var errs []error
	for _, name := range quota.ResourceNames(item.Min) {
		errs = appendErr(errs, minimum(t, name, item.Min[name], requests, limits))
	}
	for _, name := range quota.ResourceNames(item.Max) {
		errs = appendErr(errs, maximum(t, name, item.Max[name], requests, limits))
	}
	for _, name := range quota.ResourceNames(item.MaxLimitRequestRatio) {
		errs = appendErr(errs, ratio(t, name, item.MaxLimitRequestRatio[name], requests, limits))
	}
	return errs
}

func appendErr(errs []error, err error) []error {
	if err == nil {
		return errs
	}
	return append(errs, err)
}

func minimum(t string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	}
	return nil
}

func maximum(t string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := values(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, t, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, t, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

// maximumRequest is maximum for kinds without limits (claims): the request is bounded.
func maximumRequest(t string, name corev1.ResourceName, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[name]
	r, _, e := values(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, t, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, t, enforced.String(), req.String())
	}
	return nil
}

func ratio(t string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := values(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, t, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, t, enforced.String())
	}
	observed := float64(l) / float64(r)
	shown, most := observed, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, most = observed*1000, float64(enforced.MilliValue())
	}
	if observed > most {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, t, enforced.String(), shown)
	}
	return nil
}

// values compares in milli-units where nothing overflows, in units otherwise.
func values(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func requestsOf(c *corev1.Container) corev1.ResourceList { return c.Resources.Requests }
func limitsOf(c *corev1.Container) corev1.ResourceList   { return c.Resources.Limits }

// podTotal is what a pod asks for of requests (or limits), as the LimitRanger sums it: its
// containers and sidecars (restartable init containers) together, or its largest other init
// container with the sidecars started before it, whichever is more.
func podTotal(pod *corev1.Pod, of func(*corev1.Container) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(total, of(&pod.Spec.Containers[i]))
	}
	sidecars, inits := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var running corev1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(total, of(c))
			add(sidecars, of(c))
			running = sidecars
		} else {
			running = corev1.ResourceList{}
			add(running, of(c))
			add(running, sidecars)
		}
		maxInto(inits, running)
	}
	maxInto(total, inits)
	return total
}

func add(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; ok {
			cur.Add(q)
			dst[name] = cur
		} else {
			dst[name] = q.DeepCopy()
		}
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

func sorted(ranges []*corev1.LimitRange) []*corev1.LimitRange {
	out := slices.Clone(ranges)
	slices.SortFunc(out, func(a, b *corev1.LimitRange) int { return strings.Compare(a.Name, b.Name) })
	return out
}
