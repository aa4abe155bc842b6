package controller

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	demov1 "minik8s.io/test/operator/api/v1"
)

const (
	// Image is what every EchoApp runs.
	Image = "minik8s/echo:1.0"
	// LabelName selects an EchoApp's pods; its value is the EchoApp's name.
	LabelName = "app.kubernetes.io/name"
	// LabelManagedBy marks what the operator made.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "echo-operator"

	containerName = "echo"
	containerPort = 8080
	servicePort   = 80
	// envMessage is the variable the pods get spec.message in.
	envMessage = "MESSAGE"
)

// Reasons of the Available condition.
const (
	ReasonReady           = "ReplicasReady"
	ReasonNotReady        = "ReplicasNotReady"
	ReasonProgressing     = "DeploymentProgressing"
	ReasonNoDeployment    = "DeploymentMissing"
	reasonDeploymentDrift = "DeploymentCorrected"
	reasonServiceDrift    = "ServiceCorrected"
)

// wantReplicas is spec.replicas, 1 when absent (the schema defaults it, so only an object
// that bypassed the schema lacks it).
func wantReplicas(app *demov1.EchoApp) int32 {
	if app.Spec.Replicas == nil {
		return 1
	}
	return *app.Spec.Replicas
}

// selectorLabels are the labels that pick an EchoApp's pods.
func selectorLabels(app *demov1.EchoApp) map[string]string {
	return map[string]string{LabelName: app.Name}
}

func objectLabels(app *demov1.EchoApp) map[string]string {
	l := selectorLabels(app)
	l[LabelManagedBy] = ManagedBy
	return l
}

// controllerRef is the ownerReference that makes app the controller of what it owns, so
// garbage collection deletes the children with it and the reconciler hears of their changes.
func controllerRef(app *demov1.EchoApp) metav1.OwnerReference {
	return *metav1.NewControllerRef(app, demov1.GroupVersion.WithKind("EchoApp"))
}

// podTemplate is the pod an EchoApp runs, with the fields the apiserver would otherwise
// default written out, so that comparing it with a stored template finds no false drift.
func podTemplate(app *demov1.EchoApp) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: objectLabels(app)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            containerName,
				Image:           Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Env:             []corev1.EnvVar{{Name: envMessage, Value: app.Spec.Message}},
				Ports:           []corev1.ContainerPort{{Name: "http", ContainerPort: containerPort, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
						Path: "/", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP,
					}},
					PeriodSeconds: 2, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3,
				},
			}},
		},
	}
}

// DesiredDeployment is the Deployment app should have.
func DesiredDeployment(app *demov1.EchoApp) *appsv1.Deployment {
	replicas := wantReplicas(app)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name: app.Name, Namespace: app.Namespace, Labels: objectLabels(app),
			OwnerReferences: []metav1.OwnerReference{controllerRef(app)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(app)},
			Template: podTemplate(app),
		},
	}
}

// DesiredService is the ClusterIP Service in front of app's pods.
func DesiredService(app *demov1.EchoApp) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: app.Name, Namespace: app.Namespace, Labels: objectLabels(app),
			OwnerReferences: []metav1.OwnerReference{controllerRef(app)},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorLabels(app),
			Ports: []corev1.ServicePort{{
				Name: "http", Port: servicePort, TargetPort: intstr.FromInt32(containerPort), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// FixDeployment brings the fields of have that the operator owns back to want's, leaving
// alone what others (the apiserver's defaults, an admission plugin) added, and reports whether
// it changed anything. The selector is immutable and so not touched.
func FixDeployment(have, want *appsv1.Deployment) bool {
	changed := fixLabels(&have.ObjectMeta, want.Labels)
	if have.Spec.Replicas == nil || *have.Spec.Replicas != *want.Spec.Replicas {
		r := *want.Spec.Replicas
		have.Spec.Replicas, changed = &r, true
	}
	if fixLabels(&have.Spec.Template.ObjectMeta, want.Spec.Template.Labels) {
		changed = true
	}
	wc := want.Spec.Template.Spec.Containers[0]
	cs := have.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != wc.Name {
		have.Spec.Template.Spec.Containers = []corev1.Container{wc}
		return true
	}
	c := &cs[0]
	if c.Image != wc.Image {
		c.Image, changed = wc.Image, true
	}
	if !envEqual(c.Env, wc.Env) {
		c.Env, changed = wc.Env, true
	}
	if !portsEqual(c.Ports, wc.Ports) {
		c.Ports, changed = wc.Ports, true
	}
	return changed
}

// FixService is FixDeployment for the Service: type, selector and ports. The cluster IP the
// apiserver allocated stays.
func FixService(have, want *corev1.Service) bool {
	changed := fixLabels(&have.ObjectMeta, want.Labels)
	if have.Spec.Type != want.Spec.Type {
		have.Spec.Type, changed = want.Spec.Type, true
	}
	if !maps.Equal(have.Spec.Selector, want.Spec.Selector) {
		have.Spec.Selector, changed = want.Spec.Selector, true
	}
	if !servicePortsEqual(have.Spec.Ports, want.Spec.Ports) {
		have.Spec.Ports, changed = want.Spec.Ports, true
	}
	return changed
}

// fixLabels sets want's labels on m, keeping others' labels.
func fixLabels(m *metav1.ObjectMeta, want map[string]string) bool {
	changed := false
	for k, v := range want {
		if m.Labels[k] != v {
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[k], changed = v, true
		}
	}
	return changed
}

func envEqual(a, b []corev1.EnvVar) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Value != b[i].Value || a[i].ValueFrom != nil || b[i].ValueFrom != nil {
			return false
		}
	}
	return true
}

func portsEqual(a, b []corev1.ContainerPort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].ContainerPort != b[i].ContainerPort || protocol(a[i].Protocol) != protocol(b[i].Protocol) {
			return false
		}
	}
	return true
}

func servicePortsEqual(a, b []corev1.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Port != b[i].Port || a[i].TargetPort != b[i].TargetPort ||
			protocol(a[i].Protocol) != protocol(b[i].Protocol) {
			return false
		}
	}
	return true
}

// protocol is p with the apiserver's default.
func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// ComputeStatus is the status app should report given its Deployment (nil when there is
// none yet); now stamps a condition whose status changes.
func ComputeStatus(app *demov1.EchoApp, d *appsv1.Deployment, now metav1.Time) demov1.EchoAppStatus {
	st := demov1.EchoAppStatus{
		Selector:   labels.SelectorFromSet(selectorLabels(app)).String(),
		Conditions: append([]metav1.Condition(nil), app.Status.Conditions...),
	}
	want := wantReplicas(app)
	cond := metav1.Condition{
		Type: demov1.ConditionAvailable, ObservedGeneration: app.Generation, LastTransitionTime: now,
	}
	switch {
	case d == nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonNoDeployment, "the Deployment does not exist yet"
	case d.Status.ObservedGeneration < d.Generation || d.Spec.Replicas == nil || *d.Spec.Replicas != want:
		st.Replicas, st.ReadyReplicas = d.Status.Replicas, d.Status.ReadyReplicas
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonProgressing
		cond.Message = "the Deployment has not caught up with the latest spec"
	case d.Status.ReadyReplicas < want:
		st.Replicas, st.ReadyReplicas = d.Status.Replicas, d.Status.ReadyReplicas
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNotReady
		cond.Message = fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, want)
	case d.Status.Replicas != want:
		// Scaling down: the surplus pods are still there.
		st.Replicas, st.ReadyReplicas = d.Status.Replicas, d.Status.ReadyReplicas
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonNotReady
		cond.Message = fmt.Sprintf("%d pods for %d replicas", d.Status.Replicas, want)
	default:
		st.Replicas, st.ReadyReplicas = d.Status.Replicas, d.Status.ReadyReplicas
		cond.Status, cond.Reason = metav1.ConditionTrue, ReasonReady
		cond.Message = fmt.Sprintf("%d of %d replicas ready", d.Status.ReadyReplicas, want)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return st
}
