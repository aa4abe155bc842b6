package ingress

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func nginxPod(name string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec:       corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: Container, ContainerID: "docker://" + name + "-1",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPlanPods(t *testing.T) {
	deleting := metav1.Now()
	tests := []struct {
		name       string
		pods       []*corev1.Pod
		pending    int
		replicas   int
		wantCreate int
		wantDelete []string
	}{
		{"none yet", nil, 0, 2, 2, nil},
		{"enough", []*corev1.Pod{nginxPod("a"), nginxPod("b")}, 0, 2, 0, nil},
		{"created ones not in the cache yet count", []*corev1.Pod{nginxPod("a")}, 1, 2, 0, nil},
		{"a terminating pod is replaced at once", []*corev1.Pod{nginxPod("a"), nginxPod("b", func(p *corev1.Pod) { p.DeletionTimestamp = &deleting })}, 0, 2, 1, nil},
		{"a finished pod is deleted and replaced", []*corev1.Pod{nginxPod("a"), nginxPod("b", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })}, 0, 2, 1, []string{"b"}},
		{"extra pods: unscheduled, then not ready, then the youngest go", []*corev1.Pod{
			nginxPod("old"),
			nginxPod("young", func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.Add(time.Hour)) }),
			nginxPod("unready", func(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }),
			nginxPod("pending", func(p *corev1.Pod) { p.Spec.NodeName = "" }),
		}, 0, 1, 0, []string{"pending", "unready", "young"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanPods(tt.pods, tt.pending, tt.replicas)
			if got.Create != tt.wantCreate {
				t.Errorf("create %d, want %d", got.Create, tt.wantCreate)
			}
			if diff := cmp.Diff(tt.wantDelete, names(got.Delete)); diff != "" {
				t.Errorf("delete (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanDeliveries(t *testing.T) {
	deleting := metav1.Now()
	done := func(hash string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Annotations = map[string]string{ConfigAnnotation: hash + " " + p.Status.ContainerStatuses[0].ContainerID}
		}
	}
	pods := []*corev1.Pod{
		nginxPod("fresh"),
		nginxPod("current", done("h2")),
		nginxPod("outdated", done("h1")),
		nginxPod("restarted", done("h2"), func(p *corev1.Pod) { p.Status.ContainerStatuses[0].ContainerID = "docker://restarted-2" }),
		nginxPod("starting", func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
		}),
		nginxPod("pending", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
		nginxPod("going", func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }),
	}
	var got []string
	for _, d := range PlanDeliveries(pods, Container, "h2") {
		got = append(got, d.Pod.Name+" "+d.ContainerID)
	}
	want := []string{"fresh docker://fresh-1", "outdated docker://outdated-1", "restarted docker://restarted-2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deliveries (-want +got):\n%s", diff)
	}
}

func TestStatusUpdate(t *testing.T) {
	ing := &networkingv1.Ingress{}
	if StatusUpdate(ing, "") != nil {
		t.Error("no address and none wanted: want no write")
	}
	next := StatusUpdate(ing, "10.96.0.5")
	if next == nil || len(next.Status.LoadBalancer.Ingress) != 1 || next.Status.LoadBalancer.Ingress[0].IP != "10.96.0.5" {
		t.Fatalf("StatusUpdate = %+v, want the address", next)
	}
	if len(ing.Status.LoadBalancer.Ingress) != 0 {
		t.Error("StatusUpdate changed the cached object")
	}
	if StatusUpdate(next, "10.96.0.5") != nil {
		t.Error("same address: want no write")
	}
}

func TestServes(t *testing.T) {
	ours := func(name string, dflt bool) *networkingv1.IngressClass {
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: ControllerName}}
		if dflt {
			ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
		}
		return ic
	}
	traefik := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "traefik",
		Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller"}}
	named := func(n string) *networkingv1.Ingress {
		return &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: &n}}
	}
	annotated := func(n string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{ClassAnnotation: n}}}
	}
	byName := func(ics ...*networkingv1.IngressClass) map[string]*networkingv1.IngressClass {
		m := map[string]*networkingv1.IngressClass{}
		for _, ic := range ics {
			m[ic.Name] = ic
		}
		return m
	}
	tests := []struct {
		name    string
		ing     *networkingv1.Ingress
		classes map[string]*networkingv1.IngressClass
		want    bool
	}{
		{"names our class", named("nginx"), byName(ours("nginx", false), traefik), true},
		{"names another class of ours", named("internal"), byName(ours("nginx", false), ours("internal", false)), true},
		{"names another controller's class", named("traefik"), byName(ours("nginx", true), traefik), false},
		{"names a class that does not exist", named("gone"), byName(ours("nginx", true)), false},
		{"names our class's name, another controller's object", named("nginx"),
			byName(&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/other"}}), false},
		{"annotation names our class", annotated("nginx"), byName(), true},
		{"annotation names another", annotated("traefik"), byName(ours("nginx", true)), false},
		{"no class, ours the default", &networkingv1.Ingress{}, byName(ours("nginx", true), traefik), true},
		{"no class, ours not the default", &networkingv1.Ingress{}, byName(ours("nginx", false), traefik), false},
		{"no class, no class of ours", &networkingv1.Ingress{}, byName(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Serves(tt.ing, "nginx", tt.classes); got != tt.want {
				t.Errorf("Serves = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClassToMake(t *testing.T) {
	class := func(name, controller string, dflt bool) *networkingv1.IngressClass {
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
		if dflt {
			ic.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
		}
		return ic
	}
	tests := []struct {
		name        string
		existing    []*networkingv1.IngressClass
		wantMake    bool
		wantDefault bool
	}{
		{"none yet", nil, true, true},
		{"others, none default", []*networkingv1.IngressClass{class("traefik", "traefik.io/ingress-controller", false)}, true, true},
		{"another is default", []*networkingv1.IngressClass{class("traefik", "traefik.io/ingress-controller", true)}, true, false},
		{"ours exists", []*networkingv1.IngressClass{class("nginx", ControllerName, false)}, false, false},
		{"the name is taken by another controller", []*networkingv1.IngressClass{class("nginx", "example.com/other", false)}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClassToMake("nginx", tt.existing)
			if (got != nil) != tt.wantMake {
				t.Fatalf("made %+v, want one: %v", got, tt.wantMake)
			}
			if got == nil {
				return
			}
			if got.Name != "nginx" || got.Spec.Controller != ControllerName || IsDefault(got) != tt.wantDefault {
				t.Errorf("made %+v, want nginx for %s, default %v", got, ControllerName, tt.wantDefault)
			}
		})
	}
}
