package registry

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// Pods start Pending as their namespace's default service account unless they name another,
// are deleted gracefully once a node runs them, and are selectable by node, phase and more.
var _ = register(Kind[*corev1.Pod]{
	Resource:         served("pods"),
	PrepareForCreate: preparePod,
	PrepareForUpdate: keepEphemeralContainers,
	Default:          defaults.Pod,
	Admit:            admitPod,
	Validation:       validation.Pod,
	Fields:           podFields,
	Table:            tables.Pod,
	GracePeriod:      podGracePeriod,
})

// admitPod is the pod's admission on create: its LimitRanges' defaults, its service account,
// then its priority.
func admitPod(ctx context.Context, r *Registry, pod *corev1.Pod) error {
	if err := admitLimitRangeDefaults(ctx, r, pod); err != nil {
		return err
	}
	if err := admitServiceAccount(ctx, r, pod); err != nil {
		return err
	}
	return admitPodPriority(ctx, r, pod)
}

// preparePod also runs the pod as its namespace's default service account unless it names
// one, as Kubernetes' ServiceAccount admission does on create; both spellings of the field are
// kept in step.
func preparePod(pod *corev1.Pod) {
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	spec := &pod.Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = DefaultServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
}

// keepEphemeralContainers keeps a pod's ephemeral containers on an update of the pod itself:
// they change only through pods/ephemeralcontainers, as in Kubernetes.
func keepEphemeralContainers(pod, old *corev1.Pod) {
	pod.Spec.EphemeralContainers = old.Spec.EphemeralContainers
}

func podGracePeriod(pod *corev1.Pod, opts *metav1.DeleteOptions) int64 {
	// A pod no kubelet runs, or that has finished, has nothing to stop.
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts != nil && opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

func podFields(pod *corev1.Pod) fields.Set {
	return fields.Set{
		"spec.nodeName":            pod.Spec.NodeName,
		"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
		"spec.schedulerName":       pod.Spec.SchedulerName,
		"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
		"status.phase":             string(pod.Status.Phase),
		"status.podIP":             pod.Status.PodIP,
		"status.nominatedNodeName": pod.Status.NominatedNodeName,
	}
}
