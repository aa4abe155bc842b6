package podautoscaler

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/shared/podstatus"
)

// Tolerance is how far the usage ratio may stray from 1 before the replica count changes,
// Kubernetes' --horizontal-pod-autoscaler-tolerance.
const Tolerance = 0.1

// Kubernetes' defaults for judging a pod's CPU sample while it starts.
const (
	// CPUInitializationPeriod is how long after its start a pod's CPU sample is trusted only
	// when taken after the pod became ready.
	CPUInitializationPeriod = 5 * time.Minute
	// InitialReadinessDelay is how long after its start a pod that is not ready yet is taken
	// to be still starting rather than failing.
	InitialReadinessDelay = 30 * time.Second
)

// PodMetric is one pod's usage of a resource, summed over its containers, in milli-units
// (millicores, or thousandths of a byte, as Kubernetes' metrics client counts).
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// PodMetrics are the samples by pod name.
type PodMetrics map[string]PodMetric

// Estimate is what one metric proposes.
type Estimate struct {
	Replicas int32
	// Utilization is the average utilization in percent of request (Utilization targets);
	// Usage the average usage in milli-units per pod (both kinds of target).
	Utilization int32
	Usage       int64
	Timestamp   time.Time
}

// podGroups sorts pods as Kubernetes' replica calculator does before it counts them.
type podGroups struct {
	ready   int
	unready map[string]bool
	missing map[string]bool
	ignored map[string]bool
}

// groupPods puts each pod in one group: ignored (being deleted or failed), unready (pending,
// or for CPU not ready yet or sampled before it was ready while starting), missing (no
// sample), or ready.
func groupPods(pods []*corev1.Pod, metrics PodMetrics, resource corev1.ResourceName, now time.Time) podGroups {
	g := podGroups{unready: map[string]bool{}, missing: map[string]bool{}, ignored: map[string]bool{}}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed {
			g.ignored[pod.Name] = true
			continue
		}
		if pod.Status.Phase == corev1.PodPending {
			g.unready[pod.Name] = true
			continue
		}
		metric, ok := metrics[pod.Name]
		if !ok {
			g.missing[pod.Name] = true
			continue
		}
		if resource == corev1.ResourceCPU {
			var unready bool
			cond := podstatus.ReadyCondition(pod)
			switch {
			case cond == nil || pod.Status.StartTime == nil:
				unready = true
			case pod.Status.StartTime.Add(CPUInitializationPeriod).After(now):
				// Starting: a pod that is not ready, or whose sample began before it was
				// ready (start-up work), says nothing about steady load.
				unready = cond.Status == corev1.ConditionFalse || metric.Timestamp.Before(cond.LastTransitionTime.Add(metric.Window))
			default:
				// Past its start: unready only if it never became ready after starting.
				unready = cond.Status == corev1.ConditionFalse && pod.Status.StartTime.Add(InitialReadinessDelay).After(cond.LastTransitionTime.Time)
			}
			if unready {
				g.unready[pod.Name] = true
				continue
			}
		}
		g.ready++
	}
	return g
}

// podRequests sums each pod's containers' requests of resource, in milli-units; a container
// without one makes utilization meaningless, so it is an error.
func podRequests(pods []*corev1.Pod, resource corev1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, pod := range pods {
		var sum int64
		for _, c := range pod.Spec.Containers {
			q, ok := c.Resources.Requests[resource]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, pod.Name)
			}
			sum += q.MilliValue()
		}
		out[pod.Name] = sum
	}
	return out, nil
}

// usageFunc turns the samples kept into a ratio to the target and the figure reported.
type usageFunc func(metrics PodMetrics) (ratio float64, reported int64, err error)

// UtilizationReplicas is Kubernetes' replica count for a Resource metric with a Utilization
// target: the pods' summed usage as a percentage of their summed requests, against target.
func UtilizationReplicas(current int32, target int32, resource corev1.ResourceName, pods []*corev1.Pod, metrics PodMetrics, now time.Time) (Estimate, error) {
	if len(pods) == 0 {
		return Estimate{}, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	requests, err := podRequests(pods, resource)
	if err != nil {
		return Estimate{}, err
	}
	var utilization int32
	ratio := func(m PodMetrics) (float64, int64, error) {
		var used, requested int64
		for name, s := range m {
			req, ok := requests[name]
			if !ok {
				continue
			}
			used += s.Value
			requested += req
		}
		if requested == 0 {
			return 0, 0, fmt.Errorf("no metrics returned matched known pods")
		}
		u := int32(used * 100 / requested)
		return float64(u) / float64(target), used / int64(len(m)), nil
	}
	est, err := estimate(current, resource, pods, metrics, now, ratio, func(m PodMetrics, name string) {
		// A pod without a sample is assumed at its request (or the target, when that is
		// higher) when scaling down, so the guess can only make the step smaller.
		m[name] = PodMetric{Value: requests[name] * int64(max(100, target)) / 100}
	}, func(m PodMetrics) { utilization, _ = utilizationOf(m, requests) })
	est.Utilization = utilization
	return est, err
}

func utilizationOf(m PodMetrics, requests map[string]int64) (int32, bool) {
	var used, requested int64
	for name, s := range m {
		used += s.Value
		requested += requests[name]
	}
	if requested == 0 {
		return 0, false
	}
	return int32(used * 100 / requested), true
}

// AverageValueReplicas is Kubernetes' replica count for a Resource metric with an
// AverageValue target (milli-units per pod).
func AverageValueReplicas(current int32, target int64, resource corev1.ResourceName, pods []*corev1.Pod, metrics PodMetrics, now time.Time) (Estimate, error) {
	if len(pods) == 0 {
		return Estimate{}, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	if target <= 0 {
		return Estimate{}, fmt.Errorf("target average value must be positive")
	}
	ratio := func(m PodMetrics) (float64, int64, error) {
		var sum int64
		for _, s := range m {
			sum += s.Value
		}
		avg := sum / int64(len(m))
		return float64(avg) / float64(target), avg, nil
	}
	return estimate(current, resource, pods, metrics, now, ratio, func(m PodMetrics, name string) {
		m[name] = PodMetric{Value: target}
	}, nil)
}

// estimate is the part both targets share: which samples count, the tolerance, and the
// conservative guesses for pods without a usable sample.
func estimate(current int32, resource corev1.ResourceName, pods []*corev1.Pod, in PodMetrics, now time.Time,
	ratioOf usageFunc, assumeFull func(m PodMetrics, name string), observed func(m PodMetrics)) (Estimate, error) {
	g := groupPods(pods, in, resource, now)
	known := make(map[string]bool, len(pods))
	for _, p := range pods {
		known[p.Name] = true
	}
	metrics := PodMetrics{}
	var newest time.Time
	for name, s := range in {
		if g.ignored[name] || g.unready[name] || !known[name] {
			continue
		}
		metrics[name] = s
		if s.Timestamp.After(newest) {
			newest = s.Timestamp
		}
	}
	if len(metrics) == 0 {
		return Estimate{}, fmt.Errorf("did not receive metrics for targeted pods (pods might be unready)")
	}
	ratio, reported, err := ratioOf(metrics)
	if err != nil {
		return Estimate{}, err
	}
	if observed != nil {
		observed(metrics)
	}
	est := Estimate{Replicas: current, Usage: reported, Timestamp: newest}
	scaleUpWithUnready := len(g.unready) > 0 && ratio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if math.Abs(1.0-ratio) <= Tolerance {
			return est, nil
		}
		est.Replicas = int32(math.Ceil(ratio * float64(g.ready)))
		return est, nil
	}
	// Guess for the pods that could not be counted, always against the move: missing pods at
	// full use when scaling down, at none when scaling up; unready pods at none.
	for name := range g.missing {
		if ratio < 1.0 {
			assumeFull(metrics, name)
		} else if ratio > 1.0 {
			metrics[name] = PodMetric{}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = PodMetric{}
		}
	}
	newRatio, _, err := ratioOf(metrics)
	if err != nil {
		return Estimate{}, err
	}
	if math.Abs(1.0-newRatio) <= Tolerance || (ratio < 1.0 && newRatio > 1.0) || (ratio > 1.0 && newRatio < 1.0) {
		// The guesses flipped the direction or brought it within tolerance: stay.
		return est, nil
	}
	n := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && n > current) || (newRatio > 1.0 && n < current) {
		return est, nil
	}
	est.Replicas = n
	return est, nil
}
