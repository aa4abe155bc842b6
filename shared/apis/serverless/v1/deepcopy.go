package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyConditions(in []metav1.Condition) []metav1.Condition {
	if in == nil {
		return nil
	}
	out := make([]metav1.Condition, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// DeepCopyInto copies f into out.
func (f *Function) DeepCopyInto(out *Function) {
	*out = *f
	f.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	f.Spec.DeepCopyInto(&out.Spec)
	f.Status.DeepCopyInto(&out.Status)
}

// DeepCopyInto copies s into out.
func (s *FunctionSpec) DeepCopyInto(out *FunctionSpec) {
	*out = *s
	if s.Source != nil {
		out.Source = make(map[string]string, len(s.Source))
		for k, v := range s.Source {
			out.Source[k] = v
		}
	}
	sc := &s.Scale
	out.Scale = FunctionScale{
		MinReplicas:             copyInt32(sc.MinReplicas),
		MaxReplicas:             copyInt32(sc.MaxReplicas),
		TargetConcurrency:       copyInt32(sc.TargetConcurrency),
		TargetRequestsPerSecond: copyInt32(sc.TargetRequestsPerSecond),
		ContainerConcurrency:    copyInt32(sc.ContainerConcurrency),
		MaxQueue:                copyInt32(sc.MaxQueue),
		StableWindowSeconds:     copyInt32(sc.StableWindowSeconds),
		IdleSeconds:             copyInt32(sc.IdleSeconds),
	}
	out.TimeoutSeconds = copyInt32(s.TimeoutSeconds)
	s.Resources.DeepCopyInto(&out.Resources)
	if s.Env != nil {
		out.Env = make([]corev1.EnvVar, len(s.Env))
		for i := range s.Env {
			s.Env[i].DeepCopyInto(&out.Env[i])
		}
	}
	if s.Schedules != nil {
		out.Schedules = append([]FunctionSchedule(nil), s.Schedules...)
	}
}

// DeepCopyInto copies s into out.
func (s *FunctionStatus) DeepCopyInto(out *FunctionStatus) {
	*out = *s
	if s.Build != nil {
		b := *s.Build
		b.StartTime = s.Build.StartTime.DeepCopy()
		b.CompletionTime = s.Build.CompletionTime.DeepCopy()
		out.Build = &b
	}
	out.LastCallTime = s.LastCallTime.DeepCopy()
	if s.Schedules != nil {
		out.Schedules = make([]FunctionScheduleStatus, len(s.Schedules))
		for i, st := range s.Schedules {
			st.LastScheduleTime = st.LastScheduleTime.DeepCopy()
			out.Schedules[i] = st
		}
	}
	out.Conditions = copyConditions(s.Conditions)
}

// DeepCopy returns a deep copy of f.
func (f *Function) DeepCopy() *Function {
	if f == nil {
		return nil
	}
	out := new(Function)
	f.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (f *Function) DeepCopyObject() runtime.Object { return f.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *FunctionList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &FunctionList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Function, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}
