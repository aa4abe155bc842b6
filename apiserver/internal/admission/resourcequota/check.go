package resourcequota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/quota"
)

// Write is the write to admit: a new object, or an update of Old.
type Write struct {
	Object runtime.Object
	// Old is the stored object an update replaces; nil for a create.
	Old runtime.Object
}

// Charge is what a write adds to one quota.
type Charge struct {
	// Quota is a copy of the quota with status.used raised by Delta.
	Quota *corev1.ResourceQuota
	// Delta is what the write adds, in the resources the quota limits.
	Delta corev1.ResourceList
}

// Refusal is why a write may not happen: the message of a 403 Forbidden.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, args ...any) *Refusal {
	return &Refusal{Reason: fmt.Sprintf(format, args...)}
}

// Check decides w, an object of e's resource, against quotas (those of its namespace): a
// Refusal, or the charges to record, none when no quota limits what w adds. Only the status
// of quotas counts: a quota the controller has not yet measured refuses what it limits.
func Check(quotas []*corev1.ResourceQuota, e quota.Evaluator, w Write, now time.Time) ([]Charge, error) {
	if w.Old != nil && !e.ChargesUpdates() {
		return nil, nil
	}
	var limiting []*corev1.ResourceQuota
	for _, q := range quotas {
		ok, err := quota.Matches(q, e, w.Object)
		if err != nil {
			return nil, fmt.Errorf("match quota %s: %w", q.Name, err)
		}
		if !ok {
			continue
		}
		restricted := e.MatchingResources(quota.ResourceNames(q.Status.Hard))
		if err := e.Constraints(restricted, w.Object); err != nil {
			return nil, refuse("failed quota: %s: %v", q.Name, err)
		}
		if !measured(q, restricted) {
			return nil, refuse("status unknown for quota: %s, resources: %s", q.Name, quota.NamesString(restricted))
		}
		limiting = append(limiting, q)
	}
	if len(limiting) == 0 {
		return nil, nil
	}
	usage, err := e.Usage(w.Object, now)
	if err != nil {
		return nil, err
	}
	if negative := quota.Negative(usage); len(negative) > 0 {
		return nil, refuse("quota usage is negative for resource(s): %s", quota.NamesString(negative))
	}
	var charges []Charge
	for _, q := range limiting {
		delta := usage
		if w.Old != nil {
			// An update adds what the new object uses beyond the old one, where the quota
			// already counted the old one.
			counted, err := quota.Matches(q, e, w.Old)
			if err != nil {
				return nil, fmt.Errorf("match quota %s: %w", q.Name, err)
			}
			if counted {
				before, err := e.Usage(w.Old, now)
				if err != nil {
					return nil, err
				}
				delta = quota.SubtractNonNegative(usage, before)
			}
		}
		requested := quota.RemoveZeros(quota.Mask(delta, quota.ResourceNames(q.Status.Hard)))
		if len(requested) == 0 {
			continue
		}
		used := quota.Add(q.Status.Used, requested)
		if ok, exceeded := quota.LessThanOrEqual(quota.Mask(used, quota.ResourceNames(requested)), q.Status.Hard); !ok {
			return nil, refuse("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				quota.String(quota.Mask(requested, exceeded)), quota.String(quota.Mask(q.Status.Used, exceeded)),
				quota.String(quota.Mask(q.Status.Hard, exceeded)))
		}
		charged := q.DeepCopy()
		charged.Status.Used = used
		charges = append(charges, Charge{Quota: charged, Delta: requested})
	}
	return charges, nil
}

// measured reports whether the controller has recorded q's usage of every resource in names
// that q limits.
func measured(q *corev1.ResourceQuota, names []corev1.ResourceName) bool {
	for _, n := range names {
		if _, limited := q.Status.Hard[n]; !limited {
			continue
		}
		if _, ok := q.Status.Used[n]; !ok {
			return false
		}
	}
	return true
}
