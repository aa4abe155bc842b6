package defaults

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DaemonSet defaults a DaemonSet as apps/v1 does: a rolling update that replaces one pod at
// a time without surging, and ten old revisions kept.
func DaemonSet(ds *appsv1.DaemonSet) {
	st := &ds.Spec.UpdateStrategy
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if st.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if st.RollingUpdate.MaxUnavailable == nil {
			st.RollingUpdate.MaxUnavailable = ptr(intstr.FromInt32(1))
		}
		if st.RollingUpdate.MaxSurge == nil {
			st.RollingUpdate.MaxSurge = ptr(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr(int32(10))
	}
	podSpec(&ds.Spec.Template.Spec, true)
}

// TemplateGenerationAnnotation counts a DaemonSet's templates, as apps/v1 shows the
// generation its internal form keeps.
const TemplateGenerationAnnotation = "deprecated.daemonset.template.generation"

// PrepareDaemonSet sets what the server decides on a new DaemonSet: no status, and template
// generation 1.
func PrepareDaemonSet(ds *appsv1.DaemonSet) {
	ds.Status = appsv1.DaemonSetStatus{}
	setTemplateGeneration(ds, 1)
}

// KeepDaemonSetTemplateGeneration carries the template generation into an update, one more
// when the template changes; what the client sent in the annotation does not count.
func KeepDaemonSetTemplateGeneration(ds, old *appsv1.DaemonSet) {
	gen, err := strconv.ParseInt(old.Annotations[TemplateGenerationAnnotation], 10, 64)
	if err != nil || gen < 1 {
		gen = 1
	}
	defaulted := ds.DeepCopy()
	DaemonSet(defaulted)
	if !equality.Semantic.DeepEqual(defaulted.Spec.Template, old.Spec.Template) {
		gen++
	}
	setTemplateGeneration(ds, gen)
}

func setTemplateGeneration(ds *appsv1.DaemonSet, gen int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[TemplateGenerationAnnotation] = strconv.FormatInt(gen, 10)
}
