package replication

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/replicaset"
)

// Kind is the ReplicationController's group version kind, for owner references.
var Kind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// View shows ReplicationControllers to the ReplicaSet controller.
var View = replicaset.View[*corev1.ReplicationController]{Kind: Kind, ReplicaSet: ToReplicaSet, WithStatus: withStatus}

// ToReplicaSet is rc as a ReplicaSet: its selector a matchLabels one, its template (none when
// rc has none), its status with the conditions of the same types. Its metadata and template
// share rc's memory.
func ToReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: rc.Spec.Selector},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// withStatus sets st, a ReplicaSet's status, as rc's.
func withStatus(rc *corev1.ReplicationController, st appsv1.ReplicaSetStatus) *corev1.ReplicationController {
	rc.Status = corev1.ReplicationControllerStatus{
		Replicas:             st.Replicas,
		FullyLabeledReplicas: st.FullyLabeledReplicas,
		ReadyReplicas:        st.ReadyReplicas,
		AvailableReplicas:    st.AvailableReplicas,
		ObservedGeneration:   st.ObservedGeneration,
	}
	for _, c := range st.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime,
			Reason: c.Reason, Message: c.Message,
		})
	}
	return rc
}
