package controller

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	demov1 "minik8s.io/test/operator/api/v1"
)

func echoApp(name string, replicas *int32, message string) *demov1.EchoApp {
	return &demov1.EchoApp{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 2},
		Spec:       demov1.EchoAppSpec{Replicas: replicas, Message: message, Tier: demov1.TierFree},
	}
}

func TestDesiredDeployment(t *testing.T) {
	for _, tc := range []struct {
		name         string
		app          *demov1.EchoApp
		wantReplicas int32
		wantEnv      []corev1.EnvVar
	}{
		{"replicas from spec", echoApp("a", ptr.To[int32](3), "hi"), 3, []corev1.EnvVar{{Name: "MESSAGE", Value: "hi"}}},
		{"zero replicas", echoApp("b", ptr.To[int32](0), "x"), 0, []corev1.EnvVar{{Name: "MESSAGE", Value: "x"}}},
		{"no replicas is one", echoApp("c", nil, ""), 1, []corev1.EnvVar{{Name: "MESSAGE", Value: ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DesiredDeployment(tc.app)
			if d.Name != tc.app.Name || d.Namespace != "ns" {
				t.Errorf("deployment %s/%s, want ns/%s", d.Namespace, d.Name, tc.app.Name)
			}
			if got := *d.Spec.Replicas; got != tc.wantReplicas {
				t.Errorf("replicas %d, want %d", got, tc.wantReplicas)
			}
			sel := map[string]string{LabelName: tc.app.Name}
			if diff := cmp.Diff(sel, d.Spec.Selector.MatchLabels); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			for k, v := range sel {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("template label %s=%q, want %q: the selector must pick the pods", k, d.Spec.Template.Labels[k], v)
				}
			}
			cs := d.Spec.Template.Spec.Containers
			if len(cs) != 1 || cs[0].Image != "minik8s/echo:1.0" {
				t.Fatalf("containers %+v, want one running minik8s/echo:1.0", cs)
			}
			if diff := cmp.Diff(tc.wantEnv, cs[0].Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
			checkControllerRef(t, d.OwnerReferences, tc.app)
		})
	}
}

func TestDesiredService(t *testing.T) {
	app := echoApp("web", ptr.To[int32](1), "hi")
	s := DesiredService(app)
	want := corev1.ServiceSpec{
		Type:     corev1.ServiceTypeClusterIP,
		Selector: map[string]string{LabelName: "web"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}},
	}
	if diff := cmp.Diff(want, s.Spec); diff != "" {
		t.Errorf("service spec (-want +got):\n%s", diff)
	}
	checkControllerRef(t, s.OwnerReferences, app)
}

func checkControllerRef(t *testing.T, refs []metav1.OwnerReference, app *demov1.EchoApp) {
	t.Helper()
	want := []metav1.OwnerReference{{
		APIVersion: "demo.minik8s.io/v1", Kind: "EchoApp", Name: app.Name, UID: app.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
}

// stored is d as the apiserver keeps it: with defaults and fields of its own.
func stored(d *appsv1.Deployment) *appsv1.Deployment {
	s := d.DeepCopy()
	s.ResourceVersion = "7"
	s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	s.Spec.Template.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	s.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	return s
}

func TestFixDeployment(t *testing.T) {
	app := echoApp("web", ptr.To[int32](2), "hello")
	want := DesiredDeployment(app)
	for _, tc := range []struct {
		name    string
		drift   func(d *appsv1.Deployment)
		changed bool
	}{
		{"in shape", func(*appsv1.Deployment) {}, false},
		{"someone else's label stays", func(d *appsv1.Deployment) { d.Labels["team"] = "a" }, false},
		{"scaled by hand", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, true},
		{"replicas cleared", func(d *appsv1.Deployment) { d.Spec.Replicas = nil }, true},
		{"image changed", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "nginx" }, true},
		{"env changed", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "MESSAGE", Value: "other"}}
		}, true},
		{"env from a secret", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env[0].ValueFrom = &corev1.EnvVarSource{}
		}, true},
		{"port changed", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 9 }, true},
		{"pod label removed", func(d *appsv1.Deployment) { delete(d.Spec.Template.Labels, LabelName) }, true},
		{"container added", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar"})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := stored(want)
			tc.drift(have)
			before := have.DeepCopy()
			if got := FixDeployment(have, want); got != tc.changed {
				t.Errorf("FixDeployment reported changed=%v, want %v", got, tc.changed)
			}
			if !tc.changed {
				if diff := cmp.Diff(before, have); diff != "" {
					t.Errorf("changed a Deployment in shape (-before +after):\n%s", diff)
				}
				return
			}
			// Fixed: the owned fields are back, and fixing again finds nothing.
			if *have.Spec.Replicas != 2 || have.Spec.Template.Labels[LabelName] != "web" {
				t.Errorf("replicas %d, pod labels %v after the fix", *have.Spec.Replicas, have.Spec.Template.Labels)
			}
			if diff := cmp.Diff(want.Spec.Template.Spec.Containers[0].Env, have.Spec.Template.Spec.Containers[0].Env); diff != "" {
				t.Errorf("env after the fix (-want +got):\n%s", diff)
			}
			if FixDeployment(have, want) {
				t.Error("a second fix still found drift")
			}
			if have.ResourceVersion != "7" || have.Annotations["deployment.kubernetes.io/revision"] != "1" {
				t.Errorf("the fix dropped the stored metadata: %+v", have.ObjectMeta)
			}
		})
	}
}

func TestFixService(t *testing.T) {
	app := echoApp("web", ptr.To[int32](1), "hello")
	want := DesiredService(app)
	storedSvc := func() *corev1.Service {
		s := want.DeepCopy()
		s.Spec.ClusterIP = "10.96.0.9"
		s.Spec.ClusterIPs = []string{"10.96.0.9"}
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
		s.Spec.Ports[0].Protocol = ""
		return s
	}
	for _, tc := range []struct {
		name    string
		drift   func(s *corev1.Service)
		changed bool
	}{
		{"in shape", func(*corev1.Service) {}, false},
		{"type changed", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, true},
		{"selector changed", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "x"} }, true},
		{"port changed", func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"target port changed", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("web") }, true},
		{"port added", func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "x", Port: 1})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := storedSvc()
			tc.drift(have)
			if got := FixService(have, want); got != tc.changed {
				t.Fatalf("FixService reported changed=%v, want %v", got, tc.changed)
			}
			if have.Spec.ClusterIP != "10.96.0.9" {
				t.Errorf("the fix dropped the cluster IP")
			}
			if tc.changed {
				got := have.Spec.DeepCopy()
				for i := range got.Ports {
					got.Ports[i].Protocol = protocol(got.Ports[i].Protocol)
				}
				if diff := cmp.Diff([]any{want.Spec.Type, want.Spec.Selector, want.Spec.Ports}, []any{got.Type, got.Selector, got.Ports}); diff != "" {
					t.Errorf("type, selector and ports after the fix (-want +got):\n%s", diff)
				}
				if FixService(have, want) {
					t.Error("a second fix still found drift")
				}
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	deploy := func(replicas, generation, observed, have, ready int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Generation: int64(generation)},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: int64(observed), Replicas: have, ReadyReplicas: ready},
		}
	}
	cond := func(status metav1.ConditionStatus, reason, msg string, at metav1.Time) []metav1.Condition {
		return []metav1.Condition{{Type: "Available", Status: status, Reason: reason, Message: msg, ObservedGeneration: 2, LastTransitionTime: at}}
	}
	const sel = "app.kubernetes.io/name=web"
	for _, tc := range []struct {
		name   string
		app    *demov1.EchoApp
		prior  []metav1.Condition
		deploy *appsv1.Deployment
		want   demov1.EchoAppStatus
	}{
		{
			name: "no deployment yet", app: echoApp("web", ptr.To[int32](2), "m"),
			want: demov1.EchoAppStatus{Selector: sel, Conditions: cond("False", ReasonNoDeployment, "the Deployment does not exist yet", t1)},
		},
		{
			name: "deployment behind its spec", app: echoApp("web", ptr.To[int32](2), "m"), deploy: deploy(2, 3, 2, 2, 2),
			want: demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 2, Selector: sel,
				Conditions: cond("False", ReasonProgressing, "the Deployment has not caught up with the latest spec", t1)},
		},
		{
			name: "deployment not yet scaled to the spec", app: echoApp("web", ptr.To[int32](3), "m"), deploy: deploy(2, 1, 1, 2, 2),
			want: demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 2, Selector: sel,
				Conditions: cond("False", ReasonProgressing, "the Deployment has not caught up with the latest spec", t1)},
		},
		{
			name: "pods not ready", app: echoApp("web", ptr.To[int32](2), "m"), deploy: deploy(2, 1, 1, 2, 1),
			want: demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 1, Selector: sel, Conditions: cond("False", ReasonNotReady, "1 of 2 replicas ready", t1)},
		},
		{
			name: "an old pod still terminating", app: echoApp("web", ptr.To[int32](1), "m"), deploy: deploy(1, 2, 2, 2, 2),
			want: demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 2, Selector: sel, Conditions: cond("False", ReasonNotReady, "2 pods for 1 replicas", t1)},
		},
		{
			name: "all ready", app: echoApp("web", ptr.To[int32](2), "m"), deploy: deploy(2, 1, 1, 2, 2),
			want: demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 2, Selector: sel, Conditions: cond("True", ReasonReady, "2 of 2 replicas ready", t1)},
		},
		{
			name: "scaled to zero", app: echoApp("web", ptr.To[int32](0), "m"), deploy: deploy(0, 1, 1, 0, 0),
			want: demov1.EchoAppStatus{Selector: sel, Conditions: cond("True", ReasonReady, "0 of 0 replicas ready", t1)},
		},
		{
			name: "still ready keeps its transition time", app: echoApp("web", ptr.To[int32](2), "m"), deploy: deploy(2, 1, 1, 2, 2),
			prior: cond("True", ReasonReady, "2 of 2 replicas ready", t0),
			want:  demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 2, Selector: sel, Conditions: cond("True", ReasonReady, "2 of 2 replicas ready", t0)},
		},
		{
			name: "losing a pod is a transition", app: echoApp("web", ptr.To[int32](2), "m"), deploy: deploy(2, 1, 1, 2, 1),
			prior: cond("True", ReasonReady, "2 of 2 replicas ready", t0),
			want:  demov1.EchoAppStatus{Replicas: 2, ReadyReplicas: 1, Selector: sel, Conditions: cond("False", ReasonNotReady, "1 of 2 replicas ready", t1)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.app.Status.Conditions = tc.prior
			before := tc.app.DeepCopy()
			got := ComputeStatus(tc.app, tc.deploy, t1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.app); diff != "" {
				t.Errorf("ComputeStatus changed the EchoApp it read (-before +after):\n%s", diff)
			}
		})
	}
}
