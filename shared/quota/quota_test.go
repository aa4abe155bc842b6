package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/quota/quotatest"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: containers},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

func TestPodUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := []struct {
		name string
		pod  func() *corev1.Pod
		want map[string]string
	}{
		{"best effort", func() *corev1.Pod { return pod(container("a", nil, nil)) },
			map[string]string{"count/pods": "1", "pods": "1"}},
		{"containers add up", func() *corev1.Pod {
			return pod(container("a", quotatest.List("cpu", "100m", "memory", "64Mi"), quotatest.List("cpu", "200m", "memory", "128Mi")),
				container("b", quotatest.List("cpu", "50m"), nil))
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "150m", "requests.cpu": "150m", "limits.cpu": "200m",
			"memory": "64Mi", "requests.memory": "64Mi", "limits.memory": "128Mi"}},
		{"an init container larger than the sum counts alone", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("cpu", "100m"), nil))
			p.Spec.InitContainers = []corev1.Container{container("init", quotatest.List("cpu", "500m"), nil)}
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "500m", "requests.cpu": "500m"}},
		{"a sidecar init container adds to the sum", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("cpu", "100m"), nil))
			side := container("side", quotatest.List("cpu", "50m"), nil)
			side.RestartPolicy = &always
			p.Spec.InitContainers = []corev1.Container{side}
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "150m", "requests.cpu": "150m"}},
		{"overhead is charged", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("memory", "100Mi"), quotatest.List("memory", "100Mi")))
			p.Spec.Overhead = quotatest.List("memory", "10Mi")
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "memory": "110Mi", "requests.memory": "110Mi", "limits.memory": "110Mi"}},
		{"extended resources and huge pages as requests", func() *corev1.Pod {
			return pod(container("a", quotatest.List("example.com/gpu", "2", "hugepages-2Mi", "4Mi", "cpu", "1"), quotatest.List("example.com/gpu", "2", "hugepages-2Mi", "4Mi")))
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1",
			"requests.example.com/gpu": "2", "hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi"}},
		{"a finished pod keeps only its object count", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("cpu", "1"), nil))
			p.Status.Phase = corev1.PodSucceeded
			return p
		}, map[string]string{"count/pods": "1"}},
		{"a failed pod too", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("cpu", "1"), nil))
			p.Status.Phase = corev1.PodFailed
			return p
		}, map[string]string{"count/pods": "1"}},
		{"a pod within its deletion's grace period still counts", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("cpu", "1"), nil))
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-10 * time.Second)}
			p.DeletionGracePeriodSeconds = ptr(int64(30))
			return p
		}, map[string]string{"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"}},
		{"a pod past its deletion's grace period does not", func() *corev1.Pod {
			p := pod(container("a", quotatest.List("cpu", "1"), nil))
			p.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
			p.DeletionGracePeriodSeconds = ptr(int64(30))
			return p
		}, map[string]string{"count/pods": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(schema.GroupResource{Resource: "pods"}).Usage(tt.pod(), now)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, quotatest.Printed(got)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}

func TestServiceAndClaimUsage(t *testing.T) {
	ports := []corev1.ServicePort{{Port: 80}, {Port: 443, NodePort: 30443}}
	gold := "gold"
	tests := []struct {
		name string
		gr   schema.GroupResource
		obj  runtime.Object
		want map[string]string
	}{
		{"cluster IP", schema.GroupResource{Resource: "services"},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports}},
			map[string]string{"count/services": "1", "services": "1", "services.loadbalancers": "0", "services.nodeports": "0"}},
		{"node port", schema.GroupResource{Resource: "services"},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports}},
			map[string]string{"count/services": "1", "services": "1", "services.loadbalancers": "0", "services.nodeports": "2"}},
		{"load balancer", schema.GroupResource{Resource: "services"},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports}},
			map[string]string{"count/services": "1", "services": "1", "services.loadbalancers": "1", "services.nodeports": "2"}},
		{"load balancer without node ports", schema.GroupResource{Resource: "services"},
			&corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports, AllocateLoadBalancerNodePorts: ptr(false)}},
			map[string]string{"count/services": "1", "services": "1", "services.loadbalancers": "1", "services.nodeports": "1"}},
		{"claim without class", schema.GroupResource{Resource: "persistentvolumeclaims"},
			&corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: quotatest.List("storage", "1Gi")}}},
			map[string]string{"count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1", "requests.storage": "1Gi"}},
		{"claim of a class, allocated more than asked", schema.GroupResource{Resource: "persistentvolumeclaims"},
			&corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &gold, Resources: corev1.VolumeResourceRequirements{Requests: quotatest.List("storage", "1Gi")}},
				Status: corev1.PersistentVolumeClaimStatus{AllocatedResources: quotatest.List("storage", "2Gi")}},
			map[string]string{"count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1", "requests.storage": "2Gi",
				"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1", "gold.storageclass.storage.k8s.io/requests.storage": "2Gi"}},
		{"a fractional request counts whole bytes", schema.GroupResource{Resource: "persistentvolumeclaims"},
			&corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: quotatest.List("storage", "1.5")}}},
			map[string]string{"count/persistentvolumeclaims": "1", "persistentvolumeclaims": "1", "requests.storage": "2"}},
		{"configmaps under both names", schema.GroupResource{Resource: "configmaps"}, &corev1.ConfigMap{},
			map[string]string{"count/configmaps": "1", "configmaps": "1"}},
		{"any other kind under count/", schema.GroupResource{Group: "apps", Resource: "deployments"}, &metav1.PartialObjectMetadata{},
			map[string]string{"count/deployments.apps": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(tt.gr).Usage(tt.obj, now)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, quotatest.Printed(got)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}

func TestMatchingResources(t *testing.T) {
	hard := []corev1.ResourceName{"pods", "count/pods", "requests.cpu", "limits.memory", "requests.nvidia.com/gpu", "requests.hugepages-2Mi",
		"services", "services.nodeports", "configmaps", "count/configmaps", "secrets", "requests.storage",
		"gold.storageclass.storage.k8s.io/requests.storage", "count/deployments.apps", "requests.kubernetes.io/unknown"}
	tests := []struct {
		gr   schema.GroupResource
		want []corev1.ResourceName
	}{
		{schema.GroupResource{Resource: "pods"}, []corev1.ResourceName{"pods", "count/pods", "requests.cpu", "limits.memory", "requests.nvidia.com/gpu", "requests.hugepages-2Mi"}},
		{schema.GroupResource{Resource: "services"}, []corev1.ResourceName{"services", "services.nodeports"}},
		{schema.GroupResource{Resource: "configmaps"}, []corev1.ResourceName{"configmaps", "count/configmaps"}},
		{schema.GroupResource{Resource: "persistentvolumeclaims"}, []corev1.ResourceName{"requests.storage", "gold.storageclass.storage.k8s.io/requests.storage"}},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, []corev1.ResourceName{"count/deployments.apps"}},
		{schema.GroupResource{Resource: "endpoints"}, nil},
	}
	for _, tt := range tests {
		if d := cmp.Diff(tt.want, For(tt.gr).MatchingResources(hard)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tt.gr, d)
		}
	}
}

func TestPodScopes(t *testing.T) {
	bestEffort := pod(container("a", nil, nil))
	burstable := pod(container("a", quotatest.List("cpu", "100m"), nil))
	deadline := pod(container("a", nil, nil))
	deadline.Spec.ActiveDeadlineSeconds = ptr(int64(60))
	high := pod(container("a", nil, nil))
	high.Spec.PriorityClassName = "high"
	cross := pod(container("a", nil, nil))
	cross.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone", Namespaces: []string{"other"}}}}}
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	priority := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	tests := []struct {
		name string
		sel  corev1.ScopedResourceSelectorRequirement
		pod  *corev1.Pod
		want bool
	}{
		{"BestEffort, best effort", exists(corev1.ResourceQuotaScopeBestEffort), bestEffort, true},
		{"BestEffort, burstable", exists(corev1.ResourceQuotaScopeBestEffort), burstable, false},
		{"NotBestEffort, burstable", exists(corev1.ResourceQuotaScopeNotBestEffort), burstable, true},
		{"Terminating, deadline", exists(corev1.ResourceQuotaScopeTerminating), deadline, true},
		{"Terminating, none", exists(corev1.ResourceQuotaScopeTerminating), bestEffort, false},
		{"NotTerminating, none", exists(corev1.ResourceQuotaScopeNotTerminating), bestEffort, true},
		{"PriorityClass exists, high", exists(corev1.ResourceQuotaScopePriorityClass), high, true},
		{"PriorityClass exists, none", exists(corev1.ResourceQuotaScopePriorityClass), bestEffort, false},
		{"PriorityClass in high", priority(corev1.ScopeSelectorOpIn, "high", "mid"), high, true},
		{"PriorityClass in low", priority(corev1.ScopeSelectorOpIn, "low"), high, false},
		{"PriorityClass not in low", priority(corev1.ScopeSelectorOpNotIn, "low"), high, true},
		{"PriorityClass not in high", priority(corev1.ScopeSelectorOpNotIn, "high"), high, false},
		{"PriorityClass does not exist, none", priority(corev1.ScopeSelectorOpDoesNotExist), bestEffort, true},
		{"CrossNamespacePodAffinity", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), cross, true},
		{"CrossNamespacePodAffinity, none", exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), bestEffort, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := For(schema.GroupResource{Resource: "pods"}).MatchesScope(tt.sel, tt.pod)
			if err != nil || got != tt.want {
				t.Errorf("MatchesScope = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if ok, _ := For(schema.GroupResource{Resource: "configmaps"}).MatchesScope(exists(corev1.ResourceQuotaScopeBestEffort), &corev1.ConfigMap{}); ok {
		t.Error("a scope applied to a configmap")
	}
}

func TestPodConstraints(t *testing.T) {
	p := pod(container("web", quotatest.List("cpu", "100m"), nil), container("log", nil, nil))
	p.Spec.InitContainers = []corev1.Container{container("setup", quotatest.List("cpu", "1", "memory", "1Gi"), quotatest.List("cpu", "1", "memory", "1Gi"))}
	e := For(schema.GroupResource{Resource: "pods"})
	tests := []struct {
		required []corev1.ResourceName
		want     string
	}{
		{[]corev1.ResourceName{"pods", "requests.storage"}, ""},
		{[]corev1.ResourceName{"requests.cpu"}, "must specify requests.cpu for: log"},
		{[]corev1.ResourceName{"limits.cpu", "limits.memory", "requests.cpu"},
			"must specify limits.cpu for: log,web; limits.memory for: log,web; requests.cpu for: log"},
	}
	for _, tt := range tests {
		err := e.Constraints(tt.required, p)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Constraints(%v) = %q, want %q", tt.required, got, tt.want)
		}
	}
}

func TestUsageSumsWithinScopes(t *testing.T) {
	e := For(schema.GroupResource{Resource: "pods"})
	finished := pod(container("a", quotatest.List("cpu", "2"), nil))
	finished.Status.Phase = corev1.PodSucceeded
	objs := []runtime.Object{
		pod(container("a", quotatest.List("cpu", "100m"), quotatest.List("cpu", "200m"))),
		pod(container("a", quotatest.List("cpu", "300m"), nil)),
		pod(container("a", nil, nil)),
		finished,
	}
	hard := []corev1.ResourceName{"pods", "count/pods", "requests.cpu", "limits.cpu", "requests.memory", "services"}
	got, err := Usage(e, hard, nil, objs, now)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"pods": "3", "count/pods": "4", "requests.cpu": "400m", "limits.cpu": "200m", "requests.memory": "0"}
	if d := cmp.Diff(want, quotatest.Printed(got)); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	notBestEffort := []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopeNotBestEffort, Operator: corev1.ScopeSelectorOpExists}}
	got, err = Usage(e, []corev1.ResourceName{"pods"}, notBestEffort, objs, now)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"pods": "2"}, quotatest.Printed(got)); d != "" {
		t.Errorf("NotBestEffort usage (-want +got):\n%s", d)
	}
}

func TestListArithmetic(t *testing.T) {
	a, b := quotatest.List("cpu", "500m", "pods", "2"), quotatest.List("cpu", "700m", "memory", "1Gi")
	if got := String(Add(a, b)); got != "cpu=1200m,memory=1Gi,pods=2" {
		t.Errorf("Add = %s", got)
	}
	if got := String(SubtractNonNegative(a, b)); got != "cpu=0,memory=0,pods=2" {
		t.Errorf("SubtractNonNegative = %s", got)
	}
	ok, exceeded := LessThanOrEqual(quotatest.List("cpu", "1", "pods", "3", "secrets", "9"), quotatest.List("cpu", "1", "pods", "2"))
	if ok || len(exceeded) != 1 || exceeded[0] != "pods" {
		t.Errorf("LessThanOrEqual = %v %v", ok, exceeded)
	}
	if !Equals(quotatest.List("cpu", "1"), quotatest.List("cpu", "1000m")) || Equals(quotatest.List("cpu", "1"), quotatest.List("cpu", "1", "pods", "0")) {
		t.Error("Equals")
	}
	if got := Negative(quotatest.List("cpu", "-1", "pods", "1")); len(got) != 1 || got[0] != "cpu" {
		t.Errorf("Negative = %v", got)
	}
}

func TestMatchesNeedsStatusHardAndScopes(t *testing.T) {
	e := For(schema.GroupResource{Resource: "pods"})
	q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "1"), Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}}
	if ok, _ := Matches(q, e, pod(container("a", nil, nil))); ok {
		t.Error("a quota without status.hard matched")
	}
	q.Status.Hard = quotatest.List("pods", "1")
	if ok, _ := Matches(q, e, pod(container("a", nil, nil))); !ok {
		t.Error("a best-effort pod did not match a BestEffort quota")
	}
	if ok, _ := Matches(q, e, pod(container("a", quotatest.List("cpu", "1"), nil))); ok {
		t.Error("a burstable pod matched a BestEffort quota")
	}
}

func ptr[T any](v T) *T { return &v }
