package cli

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestDefaultContainer(t *testing.T) {
	containers := func(names ...string) []corev1.Container {
		var cs []corev1.Container
		for _, n := range names {
			cs = append(cs, corev1.Container{Name: n})
		}
		return cs
	}
	tests := []struct {
		name       string
		pod        corev1.Pod
		want       string
		wantNotice string
		wantErr    string
	}{
		{name: "only container, no notice", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("app")}}, want: "app"},
		{name: "first of two, with notice", pod: corev1.Pod{Spec: corev1.PodSpec{Containers: containers("app", "side")}},
			want: "app", wantNotice: `Defaulted container "app" out of: app, side`},
		{name: "init and ephemeral containers count and are named", pod: corev1.Pod{Spec: corev1.PodSpec{
			Containers: containers("app"), InitContainers: containers("setup"),
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}}},
			want: "app", wantNotice: `Defaulted container "app" out of: app, debug (ephem), setup (init)`},
		{name: "annotation decides, without notice", pod: corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{defaultContainerAnnotation: "side"}},
			Spec:       corev1.PodSpec{Containers: containers("app", "side")}}, want: "side"},
		{name: "annotation naming no container falls back to the first", pod: corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{defaultContainerAnnotation: "gone"}},
			Spec:       corev1.PodSpec{Containers: containers("app", "side")}},
			want: "app", wantNotice: `Defaulted container "app" out of: app, side`},
		{name: "no containers", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}},
			wantErr: "pod ns/p does not have any containers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, notice, err := defaultContainer(&tt.pod)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != tt.want || notice != tt.wantNotice {
				t.Errorf("got %q with notice %q, want %q with notice %q", c.Name, notice, tt.want, tt.wantNotice)
			}
		})
	}
}

func TestFindContainer(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "app", TTY: true}},
		InitContainers:      []corev1.Container{{Name: "setup"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Stdin: true}}},
	}}
	if c := findContainer(pod, "app"); c == nil || !c.TTY {
		t.Errorf("app = %+v", c)
	}
	if c := findContainer(pod, "setup"); c == nil || c.Name != "setup" {
		t.Errorf("setup = %+v", c)
	}
	if c := findContainer(pod, "debug"); c == nil || !c.Stdin {
		t.Errorf("debug = %+v", c)
	}
	if c := findContainer(pod, "nope"); c != nil {
		t.Errorf("nope = %+v", c)
	}
}

func TestMostActive(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	pod := func(name, node string, phase corev1.PodPhase, readySince *metav1.Time, restarts int32, created metav1.Time) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: restarts}}}}
		if readySince != nil {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: *readySince}}
		}
		return p
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{name: "bound beats unbound", pods: []corev1.Pod{pod("a", "", corev1.PodPending, nil, 0, t0), pod("b", "n", corev1.PodPending, nil, 0, t1)}, want: "b"},
		{name: "running beats pending", pods: []corev1.Pod{pod("a", "n", corev1.PodPending, nil, 0, t0), pod("b", "n", corev1.PodRunning, nil, 0, t1)}, want: "b"},
		{name: "ready beats not ready", pods: []corev1.Pod{pod("a", "n", corev1.PodRunning, nil, 0, t0), pod("b", "n", corev1.PodRunning, &t1, 0, t1)}, want: "b"},
		{name: "ready longer wins", pods: []corev1.Pod{pod("a", "n", corev1.PodRunning, &t1, 0, t0), pod("b", "n", corev1.PodRunning, &t0, 0, t1)}, want: "b"},
		{name: "fewer restarts win", pods: []corev1.Pod{pod("a", "n", corev1.PodRunning, &t0, 3, t0), pod("b", "n", corev1.PodRunning, &t0, 1, t1)}, want: "b"},
		{name: "older wins last", pods: []corev1.Pod{pod("a", "n", corev1.PodRunning, &t0, 0, t1), pod("b", "n", corev1.PodRunning, &t0, 0, t0)}, want: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mostActive(tt.pods).Name; got != tt.want {
				t.Errorf("picked %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPodSelector(t *testing.T) {
	tests := []struct {
		name    string
		obj     runtime.Object
		want    string
		wantErr string
	}{
		{name: "service", obj: &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}, want: "app=web"},
		{name: "service without selector", obj: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"}},
			wantErr: "invalid service 'ext': Service is defined without a selector"},
		{name: "deployment", obj: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}}},
			want: "tier in (a,b)"},
		{name: "configmap", obj: &corev1.ConfigMap{}, wantErr: "cannot attach to *v1.ConfigMap: selector not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sel, err := podSelector(tt.obj)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sel.String() != tt.want {
				t.Errorf("selector %q, want %q", sel, tt.want)
			}
		})
	}
}

func TestReattachMessage(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "app"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
	}}
	if got, want := reattachMessage("kubectl attach", pod, "app"),
		"Session ended, resume using 'kubectl attach web -c app -i -t' command when the pod is running"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := reattachMessage("kubectl attach", pod, "debug"),
		"Session ended, the ephemeral container will not be restarted but may be reattached using 'kubectl attach web -c debug -i -t' if it is still running"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
