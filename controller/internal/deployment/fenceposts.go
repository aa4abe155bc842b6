package deployment

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Fenceposts turns maxSurge and maxUnavailable (counts or percentages of desired) into pod
// counts as Kubernetes does: a surge percentage rounds up, an unavailable one down, and when
// both come to zero one pod may be unavailable, or no rollout could ever make progress.
func Fenceposts(maxSurge, maxUnavailable *intstr.IntOrString, desired int32) (surge, unavailable int32, err error) {
	s, err := scaled(maxSurge, desired, true)
	if err != nil {
		return 0, 0, fmt.Errorf("maxSurge: %w", err)
	}
	u, err := scaled(maxUnavailable, desired, false)
	if err != nil {
		return 0, 0, fmt.Errorf("maxUnavailable: %w", err)
	}
	if s == 0 && u == 0 {
		u = 1
	}
	return s, u, nil
}

func scaled(v *intstr.IntOrString, total int32, roundUp bool) (int32, error) {
	if v == nil {
		return 0, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, int(total), roundUp)
	return int32(n), err
}

func rolling(d *appsv1.Deployment) *appsv1.RollingUpdateDeployment {
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return nil
	}
	if d.Spec.Strategy.RollingUpdate == nil {
		return &appsv1.RollingUpdateDeployment{}
	}
	return d.Spec.Strategy.RollingUpdate
}

// MaxSurge is how many pods above replicas d may run during a rollout (0 for Recreate).
func MaxSurge(d *appsv1.Deployment) int32 {
	ru := rolling(d)
	if ru == nil {
		return 0
	}
	s, _, _ := Fenceposts(ru.MaxSurge, ru.MaxUnavailable, replicas(d))
	return s
}

// MaxUnavailable is how many of replicas may be unavailable during a rollout, at most
// replicas (0 for Recreate and for zero replicas).
func MaxUnavailable(d *appsv1.Deployment) int32 {
	ru := rolling(d)
	if ru == nil || replicas(d) == 0 {
		return 0
	}
	_, u, _ := Fenceposts(ru.MaxSurge, ru.MaxUnavailable, replicas(d))
	return min(u, replicas(d))
}

func replicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func rsReplicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil || rs.Spec.Replicas == nil {
		return 0
	}
	return *rs.Spec.Replicas
}
