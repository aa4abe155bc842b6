package defaults

import (
	appsv1 "k8s.io/api/apps/v1"
)

// StatefulSet defaults a StatefulSet as apps/v1 does: one replica, OrderedReady pods, a
// RollingUpdate from partition 0, ten revisions kept and claims retained.
func StatefulSet(s *appsv1.StatefulSet) {
	sp := &s.Spec
	if sp.Replicas == nil {
		sp.Replicas = ptr(int32(1))
	}
	if sp.PodManagementPolicy == "" {
		sp.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if sp.UpdateStrategy.Type == "" {
		sp.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	}
	if sp.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType {
		if sp.UpdateStrategy.RollingUpdate == nil {
			sp.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		if sp.UpdateStrategy.RollingUpdate.Partition == nil {
			sp.UpdateStrategy.RollingUpdate.Partition = ptr(int32(0))
		}
	}
	if sp.RevisionHistoryLimit == nil {
		sp.RevisionHistoryLimit = ptr(int32(10))
	}
	if sp.PersistentVolumeClaimRetentionPolicy == nil {
		sp.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	rp := sp.PersistentVolumeClaimRetentionPolicy
	if rp.WhenDeleted == "" {
		rp.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if rp.WhenScaled == "" {
		rp.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	for i := range sp.VolumeClaimTemplates {
		PersistentVolumeClaim(&sp.VolumeClaimTemplates[i])
	}
	podSpec(&sp.Template.Spec, true)
}
