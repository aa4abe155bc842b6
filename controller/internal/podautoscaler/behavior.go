package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// DefaultBehavior is what an HPA without behavior scales by, Kubernetes' defaults: up by
// the larger of 4 pods or 100% per 15 s at once, down by up to 100% per 15 s after the
// highest recommendation of the last 5 minutes.
func DefaultBehavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	maxSel := autoscalingv2.MaxChangePolicySelect
	zero, five := int32(0), int32(300)
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero, SelectPolicy: &maxSel, Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &five, SelectPolicy: &maxSel, Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		}},
	}
}

// withDefaults fills what b leaves out from DefaultBehavior, as the apiserver does.
func withDefaults(b *autoscalingv2.HorizontalPodAutoscalerBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	d := DefaultBehavior()
	if b == nil {
		return d
	}
	fill := func(r, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
		if r == nil {
			return def
		}
		out := *r
		if out.StabilizationWindowSeconds == nil {
			out.StabilizationWindowSeconds = def.StabilizationWindowSeconds
		}
		if out.SelectPolicy == nil {
			out.SelectPolicy = def.SelectPolicy
		}
		if len(out.Policies) == 0 {
			out.Policies = def.Policies
		}
		return &out
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: fill(b.ScaleUp, d.ScaleUp), ScaleDown: fill(b.ScaleDown, d.ScaleDown)}
}

// Recommendation is a replica count the metrics proposed, and when.
type Recommendation struct {
	Replicas int32
	At       time.Time
}

// ScaleEvent is a change the controller made: positive up, negative down.
type ScaleEvent struct {
	Change int32
	At     time.Time
}

// History is what the controller remembers of one HPA between syncs, as Kubernetes keeps it
// in memory: recent recommendations (for stabilization) and recent scale events (for rate
// policies). Its methods take the time as an argument so tests drive them with a fake clock.
type History struct {
	Recommendations []Recommendation
	Events          []ScaleEvent
}

// Stabilize applies the stabilization windows to desired and records it: the result is
// kept between the lowest recommendation of the scale-up window and the highest of the
// scale-down window, starting from current.
func (h *History) Stabilize(b *autoscalingv2.HorizontalPodAutoscalerBehavior, current, desired int32, now time.Time) int32 {
	upCutoff := now.Add(-time.Duration(*b.ScaleUp.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*b.ScaleDown.StabilizationWindowSeconds) * time.Second)
	up, down := desired, desired
	old := -1
	for i, r := range h.Recommendations {
		if r.At.After(upCutoff) {
			up = min(up, r.Replicas)
		}
		if r.At.After(downCutoff) {
			down = max(down, r.Replicas)
		}
		if !r.At.After(upCutoff) && !r.At.After(downCutoff) {
			old = i
		}
	}
	rec := current
	rec = max(rec, up)
	rec = min(rec, down)
	if old >= 0 {
		h.Recommendations[old] = Recommendation{Replicas: desired, At: now}
	} else {
		h.Recommendations = append(h.Recommendations, Recommendation{Replicas: desired, At: now})
	}
	return rec
}

// changedWithin sums the scale events of one direction in the period before now.
func (h *History) changedWithin(period int32, up bool, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(period) * time.Second)
	var sum int32
	for _, e := range h.Events {
		if !e.At.After(cutoff) {
			continue
		}
		if up && e.Change > 0 {
			sum += e.Change
		}
		if !up && e.Change < 0 {
			sum -= e.Change
		}
	}
	return sum
}

// ScaleUpLimit is the most replicas the scale-up policies allow now.
func (h *History) ScaleUpLimit(rules *autoscalingv2.HPAScalingRules, current int32, now time.Time) int32 {
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick, result := maxInt32, int32(math.MinInt32)
	if *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, result = minInt32, math.MaxInt32
	}
	for _, p := range rules.Policies {
		start := current - h.changedWithin(p.PeriodSeconds, true, now) + h.changedWithin(p.PeriodSeconds, false, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start + p.Value
		} else {
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// ScaleDownLimit is the fewest replicas the scale-down policies allow now.
func (h *History) ScaleDownLimit(rules *autoscalingv2.HPAScalingRules, current int32, now time.Time) int32 {
	if *rules.SelectPolicy == autoscalingv2.DisabledPolicySelect {
		return current
	}
	pick, result := minInt32, int32(math.MaxInt32)
	if *rules.SelectPolicy == autoscalingv2.MinChangePolicySelect {
		pick, result = maxInt32, math.MinInt32
	}
	for _, p := range rules.Policies {
		start := current - h.changedWithin(p.PeriodSeconds, true, now) + h.changedWithin(p.PeriodSeconds, false, now)
		var proposed int32
		if p.Type == autoscalingv2.PodsScalingPolicy {
			proposed = start - p.Value
		} else {
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// Record remembers a rescale, forgetting events older than the longest policy period of
// either direction.
func (h *History) Record(b *autoscalingv2.HorizontalPodAutoscalerBehavior, from, to int32, now time.Time) {
	if from == to {
		return
	}
	longest := int32(0)
	for _, r := range []*autoscalingv2.HPAScalingRules{b.ScaleUp, b.ScaleDown} {
		for _, p := range r.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
	}
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	kept := h.Events[:0]
	for _, e := range h.Events {
		if e.At.After(cutoff) {
			kept = append(kept, e)
		}
	}
	h.Events = append(kept, ScaleEvent{Change: to - from, At: now})
}

// Limited is a replica count after the rate policies and min/max, with the reason and
// message of the ScalingLimited condition.
type Limited struct {
	Replicas        int32
	Reason, Message string
}

// Limit bounds desired by the scale rate policies and by min and max replicas.
func (h *History) Limit(b *autoscalingv2.HorizontalPodAutoscalerBehavior, minReplicas, maxReplicas, current, desired int32, now time.Time) Limited {
	switch {
	case desired > current:
		limit := max(h.ScaleUpLimit(b.ScaleUp, current, now), current)
		allowed := Limited{Replicas: maxReplicas, Reason: "TooManyReplicas", Message: "the desired replica count is more than the maximum replica count"}
		if maxReplicas > limit {
			allowed = Limited{Replicas: limit, Reason: "ScaleUpLimit", Message: "the desired replica count is increasing faster than the maximum scale rate"}
		}
		if desired > allowed.Replicas {
			return allowed
		}
	case desired < current:
		limit := min(h.ScaleDownLimit(b.ScaleDown, current, now), current)
		allowed := Limited{Replicas: minReplicas, Reason: "TooFewReplicas", Message: "the desired replica count is less than the minimum replica count"}
		if minReplicas < limit {
			allowed = Limited{Replicas: limit, Reason: "ScaleDownLimit", Message: "the desired replica count is decreasing faster than the maximum scale rate"}
		}
		if desired < allowed.Replicas {
			return allowed
		}
	}
	return Limited{Replicas: desired, Reason: "DesiredWithinRange", Message: "the desired count is within the acceptable range"}
}

func maxInt32(a, b int32) int32 { return max(a, b) }
func minInt32(a, b int32) int32 { return min(a, b) }
