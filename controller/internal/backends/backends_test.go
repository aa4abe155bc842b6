package backends

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/informer"
)

func TestPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}},
		{Name: "b", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 5353}, {Name: "web", ContainerPort: 8080}}},
	}}}
	tests := []struct {
		name    string
		sp      corev1.ServicePort
		want    int32
		wantErr bool
	}{
		{"number", corev1.ServicePort{Port: 80, TargetPort: intstr.FromInt32(9000)}, 9000, false},
		{"unset is the port", corev1.ServicePort{Port: 80}, 80, false},
		{"name in a later container", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("web")}, 8080, false},
		{"name of the service's protocol", corev1.ServicePort{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}, 53, false},
		{"name defaults to TCP", corev1.ServicePort{Port: 53, TargetPort: intstr.FromString("dns")}, 5353, false},
		{"unknown name", corev1.ServicePort{Port: 80, TargetPort: intstr.FromString("nope")}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Port(pod, &tt.sp)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("Port = %d, %v; want %d, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// queue records the keys added.
type queue []string

func (q *queue) Add(key string) { *q = append(*q, key) }

func TestPodHandlerEnqueuesTheServicesOfAPod(t *testing.T) {
	store := informer.NewStore(nil)
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web", ResourceVersion: "1"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "all-v2", ResourceVersion: "1"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"v": "2"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "web", ResourceVersion: "1"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "manual", ResourceVersion: "1"}},
	} {
		if _, _, err := store.Apply("ADDED", s); err != nil {
			t.Fatal(err)
		}
	}
	var got queue
	h := Services{Lister: informer.NewLister[*corev1.Service](store)}.PodHandler(&got)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p", Labels: map[string]string{"app": "web", "v": "1"}}}
	relabelled := pod.DeepCopy()
	relabelled.Labels["v"] = "2"
	statusOnly := pod.DeepCopy()
	statusOnly.Status.Message = "something a kubelet wrote"
	readyNow := pod.DeepCopy()
	readyNow.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	tests := []struct {
		name string
		call func()
		want []string
	}{
		{"add", func() { h.OnAdd(pod) }, []string{"a/web"}},
		{"labels changed: old and new Services", func() { h.OnUpdate(pod, relabelled) }, []string{"a/all-v2", "a/web"}},
		{"a change endpoints do not depend on", func() { h.OnUpdate(pod, statusOnly) }, nil},
		{"readiness changed", func() { h.OnUpdate(pod, readyNow) }, []string{"a/web"}},
		{"resync", func() { h.OnUpdate(pod, pod) }, []string{"a/web"}},
		{"delete seen by a relist", func() { h.OnDelete(&informer.Tombstone{Key: "a/p", Obj: pod}) }, []string{"a/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			tt.call()
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", []string(got), tt.want)
			}
		})
	}
}
