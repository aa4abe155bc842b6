package tables

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

func ptr[T any](v T) *T { return &v }

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(3 * time.Hour), ResourceVersion: "42"}
}

func TestKindCells(t *testing.T) {
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "web", Image: "nginx:1.27"}, {Name: "log", Image: "busybox"},
	}}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cases := []struct {
		name    string
		printer Printer
		obj     runtime.Object
		want    []any
	}{
		{"node ready cordoned with roles", Node, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: ago(48 * time.Hour), Labels: map[string]string{
				"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker",
			}},
			Spec: corev1.NodeSpec{Unschedulable: true},
			Status: corev1.NodeStatus{
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.0.2"}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.32.3", OSImage: "Debian 12", ContainerRuntimeVersion: "docker://27.0"},
			},
		}, []any{"n1", "Ready,SchedulingDisabled", "control-plane,worker", "2d", "v1.32.3", "192.168.0.2", "<none>", "Debian 12", "<unknown>", "docker://27.0"}},
		{"node without conditions", Node, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}},
			[]any{"n2", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"node not ready", Node, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3", CreationTimestamp: ago(time.Minute)},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}},
			[]any{"n3", "NotReady", "<none>", "60s", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"}},
		{"service node port", Service, &corev1.Service{ObjectMeta: objMeta("web"), Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.10"}, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}},
		}}, []any{"web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "3h", "app=web"}},
		{"service load balancer pending", Service, &corev1.Service{ObjectMeta: objMeta("lb"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
			[]any{"lb", "LoadBalancer", "<none>", "<pending>", "<none>", "3h", "<none>"}},
		{"endpoints with more than three", Endpoints, &corev1.Endpoints{ObjectMeta: objMeta("web"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}},
			Ports:     []corev1.EndpointPort{{Port: 80}, {Port: 443}},
		}}}, []any{"web", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...", "3h"}},
		{"endpoints empty", Endpoints, &corev1.Endpoints{ObjectMeta: objMeta("none")}, []any{"none", "<none>", "3h"}},
		{"namespace", Namespace, &corev1.Namespace{ObjectMeta: objMeta("prod"), Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			[]any{"prod", "Active", "3h"}},
		{"event", Event, &corev1.Event{
			ObjectMeta:     objMeta("web.1"),
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", FieldPath: "spec.containers{a}"},
			Reason:         "Pulled", Type: "Normal", Message: " pulled \n", Count: 3,
			FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(2 * time.Minute),
			Source: corev1.EventSource{Component: "kubelet", Host: "n1"},
		}, []any{"2m", "Normal", "Pulled", "pod/web", "spec.containers{a}", "kubelet, n1", "pulled", "10m", int64(3), "web.1"}},
		{"event from events api without count", Event, &corev1.Event{
			ObjectMeta: objMeta("e"), InvolvedObject: corev1.ObjectReference{Kind: "Node"},
			EventTime: metav1.NewMicroTime(now.Add(-30 * time.Second)), ReportingController: "scheduler",
		}, []any{"30s", "", "", "node", "", "scheduler", "", "30s", int64(1), "e"}},
		{"configmap", ConfigMap, &corev1.ConfigMap{ObjectMeta: objMeta("cfg"), Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": nil}},
			[]any{"cfg", int64(2), "3h"}},
		{"secret", Secret, &corev1.Secret{ObjectMeta: objMeta("s"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": nil}},
			[]any{"s", "Opaque", int64(1), "3h"}},
		{"persistent volume bound", PersistentVolume, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", CreationTimestamp: ago(time.Hour)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				ClaimRef:                      &corev1.ObjectReference{Namespace: "default", Name: "data"},
				StorageClassName:              "local",
			},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
		}, []any{"pv1", "1Gi", "RWO,RWX", "Retain", "Bound", "default/data", "local", "<unset>", "", "60m", "<unset>"}},
		{"persistent volume claim pending", PersistentVolumeClaim, &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"),
			Spec:   corev1.PersistentVolumeClaimSpec{StorageClassName: ptr("local")},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		}, []any{"data", "Pending", "", "", "", "local", "<unset>", "3h", "<unset>"}},
		{"persistent volume claim bound", PersistentVolumeClaim, &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"),
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv1"},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}, []any{"data", "Bound", "pv1", "1Gi", "RWO", "", "<unset>", "3h", "<unset>"}},
		{"storage class defaults", StorageClass, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow", CreationTimestamp: ago(time.Hour)}, Provisioner: "example.com/slow"},
			[]any{"slow", "example.com/slow", "Delete", "Immediate", false, "60m"}},
		{"storage class default", StorageClass, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard", CreationTimestamp: ago(time.Hour),
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
			Provisioner: "minik8s.io/hostpath-shared", ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimRetain),
			VolumeBindingMode: ptr(storagev1.VolumeBindingWaitForFirstConsumer), AllowVolumeExpansion: ptr(true)},
			[]any{"standard (default)", "minik8s.io/hostpath-shared", "Retain", "WaitForFirstConsumer", true, "60m"}},
		{"deployment", Deployment, &appsv1.Deployment{ObjectMeta: objMeta("web"),
			Spec:   appsv1.DeploymentSpec{Replicas: ptr(int32(3)), Selector: selector, Template: template},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2},
		}, []any{"web", "2/3", int64(3), int64(2), "3h", "web,log", "nginx:1.27,busybox", "app=web"}},
		{"replicaset with defaulted replicas", ReplicaSet, &appsv1.ReplicaSet{ObjectMeta: objMeta("web-1"),
			Spec:   appsv1.ReplicaSetSpec{Selector: selector, Template: template},
			Status: appsv1.ReplicaSetStatus{Replicas: 1, ReadyReplicas: 1},
		}, []any{"web-1", int64(1), int64(1), int64(1), "3h", "web,log", "nginx:1.27,busybox", "app=web"}},
		{"hpa cpu utilization", HorizontalPodAutoscaler, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objMeta("web"),
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr(int32(1)), MaxReplicas: 10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(50))},
				}}},
			},
			Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{{
				Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(30))},
				}}}},
		}, []any{"web", "Deployment/web", "cpu: 30%/50%", "1", int64(10), int64(2), "3h"}},
		{"hpa without metrics", HorizontalPodAutoscaler, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objMeta("h"),
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "ReplicaSet", Name: "r"}, MaxReplicas: 3},
		}, []any{"h", "ReplicaSet/r", "<none>", "<unset>", int64(3), int64(0), "3h"}},
		{"job complete", Job, &batchv1.Job{ObjectMeta: objMeta("pi"),
			Spec: batchv1.JobSpec{Completions: ptr(int32(2)), Selector: selector, Template: template},
			Status: batchv1.JobStatus{Succeeded: 2, StartTime: ptr(ago(time.Hour)), CompletionTime: ptr(ago(55 * time.Minute)),
				Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}},
		}, []any{"pi", "Complete", "2/2", "5m", "3h", "web,log", "nginx:1.27,busybox", "app=web"}},
		{"job running in parallel", Job, &batchv1.Job{ObjectMeta: objMeta("par"),
			Spec:   batchv1.JobSpec{Parallelism: ptr(int32(3)), Template: template},
			Status: batchv1.JobStatus{StartTime: ptr(ago(20 * time.Second))},
		}, []any{"par", "Running", "0/1 of 3", "20s", "3h", "web,log", "nginx:1.27,busybox", "<none>"}},
		{"ingress with tls", Ingress, &networkingv1.Ingress{ObjectMeta: objMeta("ing"),
			Spec: networkingv1.IngressSpec{IngressClassName: ptr("nginx"), TLS: []networkingv1.IngressTLS{{}},
				Rules: []networkingv1.IngressRule{{Host: "a.example"}, {Host: "b.example"}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "1.2.3.4"}}}},
		}, []any{"ing", "nginx", "a.example,b.example", "1.2.3.4", "80, 443", "3h"}},
		{"ingress catch all", Ingress, &networkingv1.Ingress{ObjectMeta: objMeta("all")}, []any{"all", "<none>", "*", "", "80", "3h"}},
		{"lease", Lease, &coordinationv1.Lease{ObjectMeta: objMeta("n1"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("n1")}},
			[]any{"n1", "n1", "3h"}},
		{"controller revision", ControllerRevision, &appsv1.ControllerRevision{ObjectMeta: func() metav1.ObjectMeta {
			m := objMeta("agent-5d4b8")
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: ptr(true)}}
			return m
		}(), Revision: 2}, []any{"agent-5d4b8", "daemonset.apps/agent", int64(2), "3h"}},
		{"controller revision without controller", ControllerRevision, &appsv1.ControllerRevision{ObjectMeta: objMeta("r"), Revision: 1},
			[]any{"r", "<none>", int64(1), "3h"}},
		{"function", Function, &serverlessv1.Function{ObjectMeta: objMeta("hello"),
			Status: serverlessv1.FunctionStatus{Phase: "Ready", Version: 3, DesiredReplicas: 2, Replicas: 3, ReadyReplicas: 1,
				LastCallTime: ptr(ago(90 * time.Second)), Image: "minik8s-fn/default.hello:v3"}},
			[]any{"hello", "1/2", "v3", "Ready", "90s", "3h", "python3", "minik8s-fn/default.hello:v3"}},
		{"function never deployed nor called", Function, &serverlessv1.Function{ObjectMeta: objMeta("new")},
			[]any{"new", "0/0", "<none>", "Pending", "<none>", "3h", "python3", "<none>"}},
		{"workflow", Workflow, &serverlessv1.Workflow{ObjectMeta: objMeta("flow"),
			Spec: serverlessv1.WorkflowSpec{StartAt: "a", States: map[string]serverlessv1.State{"a": {}, "b": {}}}},
			[]any{"flow", "a", int64(2), "3h"}},
		{"workflow execution running", WorkflowExecution, &serverlessv1.WorkflowExecution{ObjectMeta: objMeta("flow-x1"),
			Spec:   serverlessv1.WorkflowExecutionSpec{Workflow: "flow"},
			Status: serverlessv1.WorkflowExecutionStatus{Phase: "Running", StartTime: ptr(ago(time.Second)), Steps: []serverlessv1.WorkflowStep{{Name: "a"}}}},
			[]any{"flow-x1", "flow", "Running", "1s", "3h", int64(1), "<none>"}},
		{"workflow execution failed", WorkflowExecution, &serverlessv1.WorkflowExecution{ObjectMeta: objMeta("flow-x2"),
			Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "flow"},
			Status: serverlessv1.WorkflowExecutionStatus{Phase: "Failed", StartTime: ptr(ago(time.Minute)), CompletionTime: ptr(ago(50 * time.Second)), DurationMilliseconds: 10250,
				Error: "ValueError", Steps: []serverlessv1.WorkflowStep{{Name: "a"}, {Name: "b"}}, StepsOmitted: 3}},
			[]any{"flow-x2", "flow", "Failed", "10s", "3h", int64(5), "ValueError"}},
		{"workflow execution under a second", WorkflowExecution, &serverlessv1.WorkflowExecution{ObjectMeta: objMeta("flow-x4"),
			Spec:   serverlessv1.WorkflowExecutionSpec{Workflow: "flow"},
			Status: serverlessv1.WorkflowExecutionStatus{Phase: "Succeeded", StartTime: ptr(ago(time.Minute)), CompletionTime: ptr(ago(time.Minute)), DurationMilliseconds: 42}},
			[]any{"flow-x4", "flow", "Succeeded", "42ms", "3h", int64(0), "<none>"}},
		{"workflow execution pending", WorkflowExecution, &serverlessv1.WorkflowExecution{ObjectMeta: objMeta("flow-x3"), Spec: serverlessv1.WorkflowExecutionSpec{Workflow: "flow"}},
			[]any{"flow-x3", "flow", "Pending", "", "3h", int64(0), "<none>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table, err := tc.printer.Table(tc.obj, Options{}, now)
			if err != nil {
				t.Fatalf("For: %v", err)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			if diff := cmp.Diff(tc.want, table.Rows[0].Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListTableMetaAndRowObjects(t *testing.T) {
	list := &corev1.PodList{
		ListMeta: metav1.ListMeta{ResourceVersion: "100", Continue: "next-token"},
		Items: []corev1.Pod{
			{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"app": "x"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", ResourceVersion: "8"}},
		},
	}
	t.Run("metadata by default", func(t *testing.T) {
		table, err := Pod.Table(list, Options{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
			t.Errorf("type meta = %v", table.TypeMeta)
		}
		if table.ResourceVersion != "100" || table.Continue != "next-token" {
			t.Errorf("list meta = %+v", table.ListMeta)
		}
		if len(table.Rows) != 2 || len(table.ColumnDefinitions) != len(podColumns) {
			t.Fatalf("rows=%d columns=%d", len(table.Rows), len(table.ColumnDefinitions))
		}
		var got metav1.PartialObjectMetadata
		if err := json.Unmarshal(table.Rows[0].Object.Raw, &got); err != nil {
			t.Fatal(err)
		}
		want := metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: list.Items[0].ObjectMeta,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("row object (-want +got):\n%s", diff)
		}
	})
	t.Run("full object", func(t *testing.T) {
		table, err := Pod.Table(list, Options{IncludeObject: metav1.IncludeObject}, now)
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.Pod
		if err := json.Unmarshal(table.Rows[1].Object.Raw, &got); err != nil {
			t.Fatal(err)
		}
		if got.Kind != "Pod" || got.APIVersion != "v1" || got.Name != "b" {
			t.Errorf("row object = %s %s %s, want v1 Pod b", got.APIVersion, got.Kind, got.Name)
		}
		if list.Items[1].Kind != "" {
			t.Error("Table changed the caller's object")
		}
	})
	t.Run("none and no headers", func(t *testing.T) {
		table, err := Pod.Table(list, Options{IncludeObject: metav1.IncludeNone, NoHeaders: true}, now)
		if err != nil {
			t.Fatal(err)
		}
		if table.ColumnDefinitions != nil {
			t.Errorf("columns = %v, want none", table.ColumnDefinitions)
		}
		raw, err := json.Marshal(table)
		if err != nil {
			t.Fatal(err)
		}
		var back metav1.Table
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if back.Rows[0].Object.Raw != nil && string(back.Rows[0].Object.Raw) != "null" {
			t.Errorf("row object = %s, want none", back.Rows[0].Object.Raw)
		}
	})
	t.Run("bad policy", func(t *testing.T) {
		_, err := Pod.Table(list, Options{IncludeObject: "Everything"}, now)
		if !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("err = %v, want ErrInvalidPolicy", err)
		}
	})
	t.Run("single object carries its resource version", func(t *testing.T) {
		table, err := Pod.Table(&list.Items[0], Options{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if table.ResourceVersion != "7" || len(table.Rows) != 1 || table.Rows[0].Cells[0] != "a" {
			t.Errorf("table = rv %q rows %v", table.ResourceVersion, table.Rows)
		}
	})
	t.Run("empty list still has columns", func(t *testing.T) {
		table, err := Deployment.Table(&appsv1.DeploymentList{}, Options{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 0 || len(table.ColumnDefinitions) != len(deploymentColumns) {
			t.Errorf("rows=%d columns=%d", len(table.Rows), len(table.ColumnDefinitions))
		}
	})
}

func TestPodColumnsMatchKubernetes(t *testing.T) {
	var got []string
	for _, c := range podColumns {
		got = append(got, c.Name+"/"+c.Type+"/"+string(rune('0'+c.Priority)))
	}
	want := []string{"Name/string/0", "Ready/string/0", "Status/string/0", "Restarts/string/0", "Age/string/0",
		"IP/string/1", "Node/string/1", "Nominated Node/string/1", "Readiness Gates/string/1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pod columns (-want +got):\n%s", diff)
	}
}

// For renders a kind with the Printer it registered, and a kind that registered none with
// the default columns, as Kubernetes' default table convertor does.
func TestForUsesRegisteredPrinter(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: objMeta("cfg"), Data: map[string]string{"a": "1"}}
	table, err := For(cm, Options{}, now)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defaultPrinter.Columns, table.ColumnDefinitions); diff != "" {
		t.Errorf("unregistered kind's columns (-want +got):\n%s", diff)
	}
	Register(schema.GroupKind{Kind: "ConfigMap"}, ConfigMap)
	t.Cleanup(func() {
		registered.Lock()
		delete(registered.printers, schema.GroupKind{Kind: "ConfigMap"})
		registered.Unlock()
	})
	for _, obj := range []runtime.Object{cm, &corev1.ConfigMapList{Items: []corev1.ConfigMap{*cm}}} {
		table, err := For(obj, Options{}, now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]any{"cfg", int64(1), "3h"}, table.Rows[0].Cells); diff != "" {
			t.Errorf("%T cells (-want +got):\n%s", obj, diff)
		}
	}
}
