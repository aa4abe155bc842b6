package function

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// AnnotationTemplateHash on a function's Deployment identifies the template the controller
// rendered: the apiserver fills defaults into what it stores, so comparing the stored template
// with a fresh rendering would always differ.
const AnnotationTemplateHash = serverlessv1.GroupName + "/template-hash"

// ContainerName is the name of the function's container in its pods.
const ContainerName = "function"

// Deployment renders the Deployment that runs version of fn from image, with replicas pods.
// It is what the controller creates; an existing Deployment gets its template and labels and
// keeps its replicas, which are the autoscaler's.
func Deployment(fn *serverlessv1.Function, image string, version int64, replicas int32) *appsv1.Deployment {
	selector := map[string]string{serverlessv1.LabelFunction: fn.Name}
	podLabels := map[string]string{
		serverlessv1.LabelFunction: fn.Name,
		serverlessv1.LabelVersion:  strconv.FormatInt(version, 10),
	}
	env := append([]corev1.EnvVar{{Name: serverlessv1.EnvHandler, Value: fn.Spec.Handler}}, fn.Spec.Env...)
	zero := intstr.FromInt32(0)
	one := intstr.FromInt32(1)
	grace := int64(10)
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
		Spec: corev1.PodSpec{
			// A call in flight when the pod is told to stop still gets its answer: the runtime
			// finishes what it serves before it exits.
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Env:             env,
				Resources:       *fn.Spec.Resources.DeepCopy(),
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: serverlessv1.RuntimePort, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: serverlessv1.RuntimeReadyPath, Port: intstr.FromInt32(serverlessv1.RuntimePort)}},
					PeriodSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: serverlessv1.RuntimeHealthPath, Port: intstr.FromInt32(serverlessv1.RuntimePort)}},
					InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 3, TimeoutSeconds: 2,
				},
			}},
		},
	}
	yes := true
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      fn.Name,
			Namespace: fn.Namespace,
			Labels:    map[string]string{serverlessv1.LabelFunction: fn.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: serverlessv1.SchemeGroupVersion.String(), Kind: "Function",
				Name: fn.Name, UID: fn.UID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			// No pod of the old version goes before a new one is ready, so an update never
			// leaves a call without a pod.
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one},
			},
			Template: tmpl,
		},
	}
	d.Annotations = map[string]string{AnnotationTemplateHash: templateHash(d)}
	return d
}

// templateHash identifies what Deployment renders besides replicas.
func templateHash(d *appsv1.Deployment) string {
	b, _ := json.Marshal(struct {
		Labels   map[string]string
		Owners   []metav1.OwnerReference
		Selector *metav1.LabelSelector
		Strategy appsv1.DeploymentStrategy
		Template corev1.PodTemplateSpec
	}{d.Labels, d.OwnerReferences, d.Spec.Selector, d.Spec.Strategy, d.Spec.Template})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// InitialReplicas is how many pods a new Deployment of fn starts with: the floor, or what the
// autoscaler already asks for.
func InitialReplicas(fn *serverlessv1.Function) int32 {
	n := fn.Status.DesiredReplicas
	if m := fn.Spec.Scale.MinReplicas; m != nil && *m > n {
		n = *m
	}
	return max(n, 0)
}

// NeedsUpdate reports whether the stored Deployment differs from the rendering want in
// anything the controller owns (not replicas), and returns the Deployment to write: have with
// want's labels, owners, selector, strategy and template.
func NeedsUpdate(have, want *appsv1.Deployment) (*appsv1.Deployment, bool) {
	if have.Annotations[AnnotationTemplateHash] == want.Annotations[AnnotationTemplateHash] {
		return nil, false
	}
	out := have.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[AnnotationTemplateHash] = want.Annotations[AnnotationTemplateHash]
	out.Labels = want.Labels
	out.OwnerReferences = want.OwnerReferences
	out.Spec.Selector = want.Spec.Selector
	out.Spec.Strategy = want.Spec.Strategy
	out.Spec.Template = want.Spec.Template
	return out, true
}

// DeployedVersion is the function version the Deployment's template runs (0 when unknown).
func DeployedVersion(d *appsv1.Deployment) int64 {
	if d == nil {
		return 0
	}
	v, _ := strconv.ParseInt(d.Spec.Template.Labels[serverlessv1.LabelVersion], 10, 64)
	return v
}

// RolledOut reports whether every pod of the Deployment runs its current template: then no
// pod needs an older image.
func RolledOut(d *appsv1.Deployment) bool {
	if d == nil || d.Status.ObservedGeneration < d.Generation {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.UpdatedReplicas >= want && d.Status.Replicas == d.Status.UpdatedReplicas
}
