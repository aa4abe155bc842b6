package job

import (
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind is the Job's group, version and kind, as owner references name it.
var Kind = batchv1.SchemeGroupVersion.WithKind("Job")

// EnvCompletionIndex is the variable an Indexed Job's containers find their index in.
const EnvCompletionIndex = "JOB_COMPLETION_INDEX"

// PodFromTemplate is a new pod of job: its template, owned by it (controller, blocking its
// foreground deletion), named after it; for an Indexed Job (index >= 0) the completion index
// as annotation, label, JOB_COMPLETION_INDEX in every container and hostname
// <job>-<index>, as Kubernetes makes them.
func PodFromTemplate(job *batchv1.Job, index int) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    job.Namespace,
			GenerateName: job.Name + "-",
			Labels:       t.Labels,
			Annotations:  t.Annotations,
			Finalizers:   t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: Kind.GroupVersion().String(), Kind: Kind.Kind, Name: job.Name, UID: job.UID,
				Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: t.Spec,
	}
	if index < 0 {
		return pod
	}
	idx := strconv.Itoa(index)
	pod.GenerateName = job.Name + "-" + idx + "-"
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = idx
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = idx
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = job.Name + "-" + idx
	}
	env := corev1.EnvVar{Name: EnvCompletionIndex, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: "metadata.annotations['" + batchv1.JobCompletionIndexAnnotation + "']"}}}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Env = append(cs[i].Env, env)
		}
	}
	return pod
}
