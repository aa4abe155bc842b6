package defaults

import corev1 "k8s.io/api/core/v1"

// ReplicationController defaults a ReplicationController as Kubernetes does: the selector and
// the labels are the template's when not given, one replica, and the template's pod defaults.
func ReplicationController(rc *corev1.ReplicationController) {
	if t := rc.Spec.Template; t != nil && t.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = t.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = t.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr(int32(1))
	}
	if rc.Spec.Template != nil {
		podSpec(&rc.Spec.Template.Spec, true)
	}
}
