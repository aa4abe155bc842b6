package informer

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// decodeEvent must read the apiserver's JSON exactly as the API machinery's decoder does:
// every field, quantity, time (including null ones), int-or-string and byte slice.
func TestDecodeEventMatchesAPIMachinery(t *testing.T) {
	yes, grace, replicas := true, int64(30), int32(3)
	now := metav1.NewTime(time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC))
	micro := metav1.NewMicroTime(time.Date(2026, 11, 22, 6, 0, 0, 123456000, time.UTC))
	holder, dur := "node-1", int32(40)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "web", UID: "u-" + "1", ResourceVersion: "42", Generation: 2,
			CreationTimestamp: now, Labels: map[string]string{"app": "web", "tier": "front"},
			Annotations:     map[string]string{"note": `quoted "value" and ünïcode`},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: &yes}},
			Finalizers:      []string{"minik8s.io/cleanup"}}
	}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		"example.com/gpu": resource.MustParse("1")}
	podSpec := corev1.PodSpec{
		NodeName: "node-1", SchedulerName: "default-scheduler", TerminationGracePeriodSeconds: &grace,
		NodeSelector: map[string]string{"disk": "ssd"},
		Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &grace}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}},
		Containers: []corev1.Container{{Name: "c", Image: "nginx", Command: []string{"nginx", "-g", "daemon off;"},
			Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}},
			Env:       []corev1.EnvVar{{Name: "A", Value: "1"}},
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.5")}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
				PeriodSeconds: 5},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	objects := []runtime.Object{
		&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta("p"), Spec: podSpec,
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5", StartTime: &now,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, RestartCount: 2,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}},
		&corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"disk": "ssd"}},
			Spec: corev1.NodeSpec{Unschedulable: true, PodCIDR: "10.244.1.0/24",
				Taints: []corev1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now}}},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("3999Mi")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastHeartbeatTime: now}},
				Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}}}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta("d"),
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr(intstr.FromString("25%")), MaxUnavailable: ptr(intstr.FromInt32(0))}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: podSpec}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 2}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta("s"),
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", Type: corev1.ServiceTypeNodePort,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), NodePort: 30080}}}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta("cm"),
			Data: map[string]string{"a": "line\nbreak"}, BinaryData: map[string][]byte{"b": {0, 1, 2, 255}}},
		&coordinationv1.Lease{TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}, ObjectMeta: meta("l"),
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &micro}},
	}
	for _, obj := range objects {
		t.Run(obj.GetObjectKind().GroupVersionKind().Kind, func(t *testing.T) {
			body, err := json.Marshal(map[string]any{"type": "MODIFIED", "object": obj})
			if err != nil {
				t.Fatal(err)
			}
			want := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
			if err := utiljson.Unmarshal(body, &struct {
				Object any `json:"object"`
			}{Object: want}); err != nil {
				t.Fatal(err)
			}
			got := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
			typ, err := decodeEvent(body, got)
			if err != nil || typ != "MODIFIED" {
				t.Fatalf("decodeEvent = %q, %v", typ, err)
			}
			if !reflect.DeepEqual(want, got) {
				w, _ := json.Marshal(want)
				g, _ := json.Marshal(got)
				t.Errorf("decoded differently:\napimachinery %s\ndecodeEvent  %s", w, g)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// BenchmarkDecodeEvent compares decodeEvent with the API machinery's decoder on a bound
// pod's message, the scheduler's most frequent one.
func BenchmarkDecodeEvent(b *testing.B) {
	body := []byte(`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"sched-1234","namespace":"default","uid":"0486d985-2086-4ba3-ab0d-2f32911287b4","resourceVersion":"123456","generation":1,"creationTimestamp":"2026-11-22T05:55:29Z","labels":{"app":"schedbench"}},"spec":{"containers":[{"name":"c","image":"pause","resources":{"requests":{"cpu":"10m","memory":"16Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","nodeName":"hollow-01234","securityContext":{},"schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true},"status":{"phase":"Pending","qosClass":"Burstable"}}}`)
	b.Run("decodeEvent", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			p := &corev1.Pod{}
			if _, err := decodeEvent(body, p); err != nil || p.Spec.NodeName == "" {
				b.Fatal(err)
			}
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			p := &corev1.Pod{}
			if err := utiljson.Unmarshal(body, &struct {
				Object any `json:"object"`
			}{Object: p}); err != nil || p.Spec.NodeName == "" {
				b.Fatal(err)
			}
		}
	})
}
