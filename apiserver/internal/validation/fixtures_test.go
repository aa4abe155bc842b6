package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/scheme"
)

// problem is the part of a field.Error a test pins down: the kind of error and where.
type problem struct {
	Type  field.ErrorType
	Field string
}

func problems(errs field.ErrorList) []problem {
	var out []problem
	for _, e := range errs {
		out = append(out, problem{e.Type, e.Field})
	}
	return out
}

// check compares the problems of errs with want and shows the full messages on a mismatch.
func check(t *testing.T, errs field.ErrorList, want []problem) {
	t.Helper()
	if diff := cmp.Diff(want, problems(errs)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\nfull: %v", diff, errs.ToAggregate())
	}
}

// createCase mutates a valid object into the case under test.
type createCase[T runtime.Object] struct {
	name   string
	mutate func(T)
	want   []problem
}

// runCreate defaults each mutated fixture and validates it as a kind with rules, as the
// apiserver does on create; def is the kind's defaults (nil: it has none).
func runCreate[T runtime.Object](t *testing.T, rules Rules[T], def func(T), fixture func() T, cases []createCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := fixture()
			if tc.mutate != nil {
				tc.mutate(obj)
			}
			applyDefaults(def, obj)
			check(t, append(rules.ValidateCreate(obj, namespaced(t, obj)), rules.ValidateNew(obj)...), tc.want)
		})
	}
}

type updateCase[T runtime.Object] struct {
	name   string
	mutate func(newObj T)
	want   []problem
}

// runUpdate validates a mutated copy of the defaulted fixture as an update of the original.
func runUpdate[T runtime.Object](t *testing.T, rules Rules[T], def func(T), fixture func() T, cases []updateCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := fixture()
			applyDefaults(def, old)
			n := old.DeepCopyObject().(T)
			tc.mutate(n)
			check(t, rules.ValidateUpdate(n, old), tc.want)
		})
	}
}

func applyDefaults[T runtime.Object](def func(T), obj T) {
	if def != nil {
		def(obj)
	}
}

// namespaced reports whether obj's kind is, as scheme.Resources says.
func namespaced(t *testing.T, obj runtime.Object) bool {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := scheme.ByGVK(gvks[0])
	if !ok {
		t.Fatalf("%T is not a served kind", obj)
	}
	return res.Namespaced
}

func req(f string) problem  { return problem{field.ErrorTypeRequired, f} }
func inv(f string) problem  { return problem{field.ErrorTypeInvalid, f} }
func nsup(f string) problem { return problem{field.ErrorTypeNotSupported, f} }
func dup(f string) problem  { return problem{field.ErrorTypeDuplicate, f} }
func nf(f string) problem   { return problem{field.ErrorTypeNotFound, f} }
func forb(f string) problem { return problem{field.ErrorTypeForbidden, f} }
func long(f string) problem { return problem{field.ErrorTypeTooLong, f} }

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}

func ptr[T any](v T) *T { return &v }

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  "web",
			Image: "nginx:1.27",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
		}},
	}
}

func newPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: meta("web"), Spec: podSpec()}
}

func template(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec()}
}

func newDeployment() *appsv1.Deployment {
	l := map[string]string{"app": "web"}
	return &appsv1.Deployment{ObjectMeta: meta("web"), Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: l},
		Template: template(l),
	}}
}

func newReplicaSet() *appsv1.ReplicaSet {
	l := map[string]string{"app": "web"}
	return &appsv1.ReplicaSet{ObjectMeta: meta("web-1"), Spec: appsv1.ReplicaSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: l},
		Template: template(l),
	}}
}

func newJob() *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: meta("pi"), Spec: batchv1.JobSpec{Template: template(nil)}}
	j.UID = "5f0c1c3e-0000-4000-8000-000000000001"
	j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	return j
}

func newService() *corev1.Service {
	return &corev1.Service{ObjectMeta: meta("web"), Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80}},
	}}
}

func newHPA() *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: meta("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MaxReplicas:    5,
	}}
}

func newFunction() *serverlessv1.Function {
	return &serverlessv1.Function{ObjectMeta: meta("hello"), Spec: serverlessv1.FunctionSpec{
		Handler: "main.handle",
		Source:  map[string]string{"main.py": "def handle(event):\n    return event\n"},
	}}
}

func newWorkflow() *serverlessv1.Workflow {
	return &serverlessv1.Workflow{ObjectMeta: meta("flow"), Spec: serverlessv1.WorkflowSpec{
		StartAt: "double",
		States: map[string]serverlessv1.State{
			"double": {Type: serverlessv1.StateTask, Function: "double", Next: "check"},
			"check": {Type: serverlessv1.StateChoice, Choices: []serverlessv1.ChoiceRule{
				{Variable: "$.n", NumericGreaterThan: ptr(100.0), Next: "done"},
			}, Default: "double"},
			"done": {Type: serverlessv1.StateSucceed},
		},
	}}
}

func newPV() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/pv1"}},
	}}
}

func newPVC() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: meta("data"), Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}
}

func newIngress() *networkingv1.Ingress {
	return &networkingv1.Ingress{ObjectMeta: meta("web"), Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{
			Host: "web.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path:     "/",
					PathType: ptr(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80},
					}},
				}},
			}},
		}},
	}}
}

func newLease() *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("node-1"), LeaseDurationSeconds: ptr(int32(40))}}
}
