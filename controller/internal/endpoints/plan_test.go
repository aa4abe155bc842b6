package endpoints

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(name string, mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "web"},
			ClusterIP: "10.96.0.10",
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// pod is a Running pod of app=web with an IP; ready sets its Ready condition.
func pod(name, ip string, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9090},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func addr(name, ip string) corev1.EndpointAddress {
	node := "n1"
	return corev1.EndpointAddress{IP: ip, NodeName: &node,
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
}

var (
	httpPort = corev1.EndpointPort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}
	ownLabel = map[string]string{"team": "a", LabelManagedBy: ManagedBy}
)

func TestDesired(t *testing.T) {
	deleting := metav1.Now()
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		{"no pods", service("s"), nil, nil},
		{"ready and not ready", service("s"),
			[]*corev1.Pod{pod("b", "10.244.0.3", true), pod("a", "10.244.0.2", false), pod("c", "10.244.0.1", true)},
			[]corev1.EndpointSubset{{
				Addresses:         []corev1.EndpointAddress{addr("c", "10.244.0.1"), addr("b", "10.244.0.3")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")},
				Ports:             []corev1.EndpointPort{httpPort},
			}}},
		{"pods without IP, finished, terminating or not selected are left out", service("s"),
			[]*corev1.Pod{
				pod("noip", "", true),
				pod("done", "10.244.0.5", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				pod("failed", "10.244.0.6", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				pod("going", "10.244.0.7", true, func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }),
				pod("other", "10.244.0.8", true, func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
				pod("elsewhere", "10.244.0.9", true, func(p *corev1.Pod) { p.Namespace = "kube-system" }),
				pod("ok", "10.244.0.2", true),
			},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("ok", "10.244.0.2")}, Ports: []corev1.EndpointPort{httpPort}}}},
		{"publishNotReadyAddresses lists every pod as ready, terminating ones too",
			service("s", func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			[]*corev1.Pod{pod("a", "10.244.0.2", false), pod("b", "10.244.0.3", true, func(p *corev1.Pod) { p.DeletionTimestamp = &deleting })},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2"), addr("b", "10.244.0.3")}, Ports: []corev1.EndpointPort{httpPort}}}},
		{"named target port resolved per pod; pods without it left out",
			service("s", func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}}
			}),
			[]*corev1.Pod{
				pod("a", "10.244.0.2", true),
				pod("b", "10.244.0.3", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 8081 }),
				pod("c", "10.244.0.4", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }),
				pod("udp", "10.244.0.5", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP }),
			},
			[]corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: []corev1.EndpointPort{httpPort}},
				{Addresses: []corev1.EndpointAddress{addr("b", "10.244.0.3")}, Ports: []corev1.EndpointPort{{Name: "http", Port: 8081, Protocol: corev1.ProtocolTCP}}},
			}},
		{"several ports; a pod serving only some gets a subset of its own",
			service("s", func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("metrics")},
					{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)},
				}
			}),
			[]*corev1.Pod{pod("a", "10.244.0.2", true), pod("b", "10.244.0.3", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			[]corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("b", "10.244.0.3")}, Ports: []corev1.EndpointPort{httpPort}},
				{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: []corev1.EndpointPort{httpPort, {Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}}},
			}},
		{"unset target port is the port",
			service("s", func(s *corev1.Service) { s.Spec.Ports = []corev1.ServicePort{{Port: 5432}} }),
			[]*corev1.Pod{pod("a", "10.244.0.2", true)},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: []corev1.EndpointPort{{Port: 5432, Protocol: corev1.ProtocolTCP}}}}},
		{"headless without ports lists addresses; hostname under its subdomain",
			service("db", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
			[]*corev1.Pod{
				pod("db-0", "10.244.0.2", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db" }),
				pod("x", "10.244.0.3", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "x", "other" }),
			},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{
				func() corev1.EndpointAddress { a := addr("db-0", "10.244.0.2"); a.Hostname = "db-0"; return a }(),
				addr("x", "10.244.0.3"),
			}}}},
		{"an IPv6 pod IP is skipped for the IPv4 one",
			service("s"),
			[]*corev1.Pod{pod("a", "fd00::2", true, func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "fd00::2"}, {IP: "10.244.0.2"}} })},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.244.0.2")}, Ports: []corev1.EndpointPort{httpPort}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Desired(tt.svc, tt.pods)
			if got.Name != tt.svc.Name || got.Namespace != tt.svc.Namespace {
				t.Errorf("Endpoints %s/%s, want the Service's name", got.Namespace, got.Name)
			}
			if diff := cmp.Diff(tt.want, got.Subsets); diff != "" {
				t.Errorf("subsets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDesiredLabels(t *testing.T) {
	if diff := cmp.Diff(ownLabel, Desired(service("s"), nil).Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	headless := Desired(service("s", func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }), nil)
	if _, ok := headless.Labels[LabelHeadless]; !ok {
		t.Errorf("headless Service's Endpoints labels %v lack %s", headless.Labels, LabelHeadless)
	}
}

func TestDesiredTruncatesReadyFirst(t *testing.T) {
	var pods []*corev1.Pod
	for i := range MaxAddresses + 10 {
		pods = append(pods, pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.244.%d.%d", i/250, i%250+1), i%2 == 0))
	}
	got := Desired(service("s"), pods)
	if got.Annotations[corev1.EndpointsOverCapacity] != "truncated" {
		t.Errorf("annotations %v, want %s=truncated", got.Annotations, corev1.EndpointsOverCapacity)
	}
	s := got.Subsets[0]
	if len(s.Addresses) != (MaxAddresses+10)/2 || len(s.Addresses)+len(s.NotReadyAddresses) != MaxAddresses {
		t.Errorf("kept %d ready and %d not ready, want all %d ready and %d in all", len(s.Addresses), len(s.NotReadyAddresses), (MaxAddresses+10)/2, MaxAddresses)
	}
}

func TestUpdate(t *testing.T) {
	svc := service("s")
	pods := []*corev1.Pod{pod("a", "10.244.0.2", true), pod("b", "10.244.0.3", true)}
	desired := Desired(svc, pods)

	stored := desired.DeepCopy()
	stored.ResourceVersion = "7"
	stored.Annotations = map[string]string{"note": "kept"}
	// The apiserver may hand back the same addresses in another order.
	stored.Subsets[0].Addresses[0], stored.Subsets[0].Addresses[1] = stored.Subsets[0].Addresses[1], stored.Subsets[0].Addresses[0]
	if u := Update(stored, desired); u != nil {
		t.Errorf("Update of an equal Endpoints = %+v, want nil (no write)", u)
	}

	changed := Desired(svc, pods[:1])
	u := Update(stored, changed)
	if u == nil {
		t.Fatal("Update after a pod left = nil, want a write")
	}
	if u.ResourceVersion != "7" || u.Annotations["note"] != "kept" {
		t.Errorf("Update lost the stored resourceVersion or annotations: %+v", u.ObjectMeta)
	}
	if diff := cmp.Diff(changed.Subsets, u.Subsets); diff != "" {
		t.Errorf("subsets (-want +got):\n%s", diff)
	}

	relabelled := stored.DeepCopy()
	relabelled.Labels = map[string]string{"team": "b"}
	if u := Update(relabelled, desired); u == nil || u.Labels[LabelManagedBy] != ManagedBy || u.Labels["team"] != "a" {
		t.Errorf("Update of changed labels = %v, want the Service's labels and ours", u)
	}
}
