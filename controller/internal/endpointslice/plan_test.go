package endpointslice

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(mutate ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}},
		},
	}
	for _, m := range mutate {
		m(s)
	}
	return s
}

// pod i is a Running app=web pod at 10.244.0.<i> on node n<i%2> whose "web" port is 8080.
func pod(i int, ready bool, mutate ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	name := fmt.Sprintf("p%03d", i)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: fmt.Sprintf("n%d", i%2), Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.244.%d.%d", i/200, i%200+1),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func ep(i int, ready, serving, terminating bool) discoveryv1.Endpoint {
	p := pod(i, ready)
	e := discoveryv1.Endpoint{
		Addresses:  []string{p.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		NodeName:   ptr(p.Spec.NodeName),
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: p.Name, UID: p.UID},
	}
	if p.Spec.NodeName == "n0" {
		e.Zone = ptr("zone-a")
	}
	return e
}

func readyEP(i int) discoveryv1.Endpoint { return ep(i, true, true, false) }

func ports(port int32) []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{{Name: ptr("http"), Port: &port, Protocol: ptr(corev1.ProtocolTCP)}}
}

var zones = map[string]string{"n0": "zone-a"}

func sliceLabels() map[string]string {
	return map[string]string{"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: ManagedBy}
}

// slice is a stored slice of the Service (owned, labelled) named name.
func slice(name string, p []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	yes := true
	if eps == nil {
		eps = []discoveryv1.Endpoint{}
	}
	if p == nil {
		p = []discoveryv1.EndpointPort{}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: "5", Labels: sliceLabels(),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: "web", UID: "svc-uid", Controller: &yes, BlockOwnerDeletion: &yes}}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: eps, Ports: p,
	}
}

// created is slice as Compute creates it: generateName, no name, no resourceVersion.
func created(p []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	s := slice("", p, eps...)
	s.GenerateName, s.ResourceVersion = "web-", ""
	return s
}

func pods(from, to int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < to; i++ {
		out = append(out, pod(i, true))
	}
	return out
}

func eps(from, to int) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	for i := from; i < to; i++ {
		out = append(out, readyEP(i))
	}
	return out
}

func TestCompute(t *testing.T) {
	deleting := metav1.Now()
	tests := []struct {
		name     string
		svc      *corev1.Service
		pods     []*corev1.Pod
		existing []*discoveryv1.EndpointSlice
		max      int
		want     Plan
	}{
		{name: "a Service without pods gets a placeholder", svc: service(),
			want: Plan{Create: []*discoveryv1.EndpointSlice{created(nil)}}},
		{name: "the placeholder stays as it is", svc: service(), existing: []*discoveryv1.EndpointSlice{slice("web-a", nil)}},
		{name: "the first pods take over the placeholder", svc: service(), pods: pods(1, 3),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", nil)},
			want:     Plan{Update: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 3)...)}}},
		{name: "nothing changed, nothing written", svc: service(), pods: pods(1, 3),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 3)...)}},
		{name: "conditions: ready, not ready, terminating (serving or not)", svc: service(),
			pods: []*corev1.Pod{pod(1, true), pod(2, false),
				pod(3, true, func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }),
				pod(4, false, func(p *corev1.Pod) { p.DeletionTimestamp = &deleting }),
				pod(5, true, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				pod(6, true, func(p *corev1.Pod) { p.Status.PodIP = "" })},
			want: Plan{Create: []*discoveryv1.EndpointSlice{created(ports(8080),
				readyEP(1), ep(2, false, false, false), ep(3, false, true, true), ep(4, false, false, true))}}},
		{name: "publishNotReadyAddresses makes every endpoint ready",
			svc:  service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{pod(2, false)},
			want: Plan{Create: []*discoveryv1.EndpointSlice{created(ports(8080), ep(2, true, false, false))}}},
		{name: "at most max endpoints per slice", svc: service(), pods: pods(0, 250),
			want: Plan{Create: []*discoveryv1.EndpointSlice{created(ports(8080), eps(0, 100)...), created(ports(8080), eps(100, 200)...), created(ports(8080), eps(200, 250)...)}}},
		{name: "a pod leaves and another joins: the new one takes the freed place, the other slice stays",
			svc: service(), pods: append(pods(1, 3), pods(4, 6)...), max: 3,
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 4)...), slice("web-b", ports(8080), readyEP(4))},
			want:     Plan{Update: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1), readyEP(2), readyEP(5))}}},
		{name: "a new pod fills a slice with room before a new slice is made", svc: service(), pods: pods(1, 4), max: 3,
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 3)...)},
			want:     Plan{Update: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 4)...)}}},
		{name: "a pod whose readiness changed is updated in place", svc: service(), pods: []*corev1.Pod{pod(1, true), pod(2, false)},
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 3)...)},
			want:     Plan{Update: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1), ep(2, false, false, false))}}},
		{name: "the last pod leaving deletes emptied slices but keeps one as a placeholder", svc: service(),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1)), slice("web-b", ports(8080), readyEP(2))},
			want: Plan{Update: []*discoveryv1.EndpointSlice{slice("web-a", nil)},
				Delete: []*discoveryv1.EndpointSlice{slice("web-b", ports(8080), readyEP(2))}}},
		{name: "an emptied slice goes while others hold endpoints", svc: service(), pods: pods(1, 2),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1)), slice("web-b", ports(8080), readyEP(2))},
			want:     Plan{Delete: []*discoveryv1.EndpointSlice{slice("web-b", ports(8080), readyEP(2))}}},
		{name: "named ports resolved per pod: one slice per port set",
			svc: service(),
			pods: []*corev1.Pod{pod(1, true), pod(2, true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9090 }),
				pod(3, true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			want: Plan{Create: []*discoveryv1.EndpointSlice{created(ports(8080), readyEP(1)), created(ports(9090), readyEP(2))}}},
		{name: "a changed target port replaces the slice", svc: service(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(8081) }),
			pods:     pods(1, 2),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1))},
			want: Plan{Create: []*discoveryv1.EndpointSlice{created(ports(8081), readyEP(1))},
				Delete: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1))}}},
		{name: "a slice of an earlier Service of the same name is replaced", svc: service(func(s *corev1.Service) { s.UID = "new-uid" }),
			pods:     pods(1, 2),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1))},
			want: Plan{Create: []*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice {
				s := created(ports(8080), readyEP(1))
				s.OwnerReferences[0].UID = "new-uid"
				return s
			}()}, Delete: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1))}}},
		{name: "an endpoint listed twice stays in the first slice", svc: service(), pods: pods(1, 3),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), eps(1, 3)...), slice("web-b", ports(8080), readyEP(2))},
			want:     Plan{Delete: []*discoveryv1.EndpointSlice{slice("web-b", ports(8080), readyEP(2))}}},
		{name: "the Service's labels follow", svc: service(func(s *corev1.Service) { s.Labels = map[string]string{"team": "b"} }),
			pods:     pods(1, 2),
			existing: []*discoveryv1.EndpointSlice{slice("web-a", ports(8080), readyEP(1))},
			want: Plan{Update: []*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice {
				s := slice("web-a", ports(8080), readyEP(1))
				s.Labels["team"] = "b"
				return s
			}()}}},
		{name: "headless without ports lists addresses, with hostnames under the subdomain",
			svc:  service(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.Ports = corev1.ClusterIPNone, nil }),
			pods: []*corev1.Pod{pod(1, true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "web" })},
			want: Plan{Create: []*discoveryv1.EndpointSlice{func() *discoveryv1.EndpointSlice {
				e := readyEP(1)
				e.Hostname = ptr("db-0")
				s := created(nil, e)
				s.Labels[LabelHeadless] = ""
				return s
			}()}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute(Input{Service: tt.svc, Pods: tt.pods, Zones: zones, Existing: tt.existing, MaxPerSlice: tt.max})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestComputeIsStable applies each plan to a simulated store and checks that a second
// Compute over the result writes nothing.
func TestComputeIsStable(t *testing.T) {
	svc := service()
	var stored []*discoveryv1.EndpointSlice
	n := 0
	apply := func(p Plan) {
		del := map[string]bool{}
		for _, s := range p.Delete {
			del[s.Name] = true
		}
		var next []*discoveryv1.EndpointSlice
		for _, s := range stored {
			if del[s.Name] {
				continue
			}
			for _, u := range p.Update {
				if u.Name == s.Name {
					s = u
				}
			}
			next = append(next, s)
		}
		for _, c := range p.Create {
			c = c.DeepCopy()
			n++
			c.Name, c.GenerateName = fmt.Sprintf("web-%03d", n), ""
			next = append(next, c)
		}
		stored = next
	}
	for _, ps := range [][]*corev1.Pod{nil, pods(0, 10), pods(0, 150), pods(20, 170), pods(160, 161), nil} {
		apply(Compute(Input{Service: svc, Pods: ps, Existing: stored}))
		if again := Compute(Input{Service: svc, Pods: ps, Existing: stored}); !again.Empty() {
			t.Fatalf("%d pods: a second plan writes %d/%d/%d (create/update/delete), want nothing", len(ps), len(again.Create), len(again.Update), len(again.Delete))
		}
		total := 0
		for _, s := range stored {
			total += len(s.Endpoints)
			if len(s.Endpoints) > MaxEndpointsPerSlice {
				t.Errorf("slice %s holds %d endpoints", s.Name, len(s.Endpoints))
			}
		}
		if total != len(ps) {
			t.Errorf("%d pods are listed as %d endpoints", len(ps), total)
		}
		if len(stored) == 0 {
			t.Errorf("%d pods: no slice at all, want at least a placeholder", len(ps))
		}
	}
}
