package resourcequota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/quota"
	"minik8s.io/shared/quota/quotatest"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func pod(name string, phase corev1.PodPhase, cpu string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = quotatest.List("cpu", cpu)
		p.Spec.Containers[0].Resources.Limits = quotatest.List("cpu", cpu)
	}
	return p
}

func deleting(p *corev1.Pod, since time.Duration, grace int64) *corev1.Pod {
	p.DeletionTimestamp = &metav1.Time{Time: now.Add(-since)}
	p.DeletionGracePeriodSeconds = &grace
	return p
}

var (
	podsGR       = schema.GroupResource{Resource: "pods"}
	configmapsGR = schema.GroupResource{Resource: "configmaps"}
	deployGR     = schema.GroupResource{Group: "apps", Resource: "deployments"}
)

func TestStatus(t *testing.T) {
	objs := map[schema.GroupResource][]runtime.Object{
		podsGR: {
			pod("a", corev1.PodRunning, "500m"),
			pod("b", corev1.PodPending, ""),
			pod("done", corev1.PodSucceeded, "2"),
			pod("failed", corev1.PodFailed, "2"),
			deleting(pod("stopping", corev1.PodRunning, "100m"), 10*time.Second, 30),
			deleting(pod("lost", corev1.PodRunning, "4"), time.Hour, 30),
		},
		configmapsGR: {&metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{}},
		deployGR:     {&metav1.PartialObjectMetadata{}},
	}
	counted := []schema.GroupResource{configmapsGR, deployGR, podsGR}
	source := func(gr schema.GroupResource, ns string) ([]runtime.Object, error) {
		if ns != "ns" {
			t.Errorf("listed namespace %q", ns)
		}
		return objs[gr], nil
	}
	tests := []struct {
		name    string
		quota   *corev1.ResourceQuota
		want    map[string]string
		recheck time.Time
	}{
		{"compute and counts", &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{
			Hard: quotatest.List("pods", "10", "count/pods", "10", "requests.cpu", "4", "limits.memory", "1Gi", "configmaps", "5", "count/deployments.apps", "2")}},
			// Finished pods and the one past its grace period count only in count/pods; the one
			// still in its grace period counts until it ends.
			map[string]string{"pods": "3", "count/pods": "6", "requests.cpu": "600m", "limits.memory": "0", "configmaps": "2", "count/deployments.apps": "1"},
			now.Add(20 * time.Second)},
		{"scoped to best-effort pods", &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "10"),
			Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}},
			map[string]string{"pods": "1"}, time.Time{}},
		{"scopes limit nothing but pods", &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("configmaps", "10"),
			ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpExists}}}}},
			map[string]string{"configmaps": "0"}, time.Time{}},
		{"what nothing counts keeps its record; what is no longer limited goes",
			&corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("count/widgets.example.com", "3", "configmaps", "5")},
				Status: corev1.ResourceQuotaStatus{Used: quotatest.List("count/widgets.example.com", "1", "services", "4")}},
			map[string]string{"count/widgets.example.com": "1", "configmaps": "2"}, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.quota.Namespace = "ns"
			st, recheck, err := Status(tt.quota, counted, source, now)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for k, v := range st.Used {
				got[string(k)] = v.String()
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("used (-want +got):\n%s", d)
			}
			if !quota.Equals(st.Hard, tt.quota.Spec.Hard) {
				t.Errorf("hard %v, want the spec's %v", st.Hard, tt.quota.Spec.Hard)
			}
			if !recheck.Equal(tt.recheck) {
				t.Errorf("recheck %v, want %v", recheck, tt.recheck)
			}
		})
	}
}

func TestUsageChanged(t *testing.T) {
	svc := func(typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	claim := func(size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: quotatest.List("storage", size)}}}
	}
	withLabel := func(p *corev1.Pod) *corev1.Pod { p.Labels = map[string]string{"a": "b"}; return p }
	tests := []struct {
		name     string
		gr       schema.GroupResource
		old, obj runtime.Object
		want     bool
	}{
		{"pod finished", podsGR, pod("a", corev1.PodRunning, "1"), pod("a", corev1.PodSucceeded, "1"), true},
		{"pod relabelled", podsGR, pod("a", corev1.PodRunning, "1"), withLabel(pod("a", corev1.PodRunning, "1")), false},
		{"pod deletion began", podsGR, pod("a", corev1.PodRunning, "1"), deleting(pod("a", corev1.PodRunning, "1"), 0, 30), true},
		{"service became a node port", schema.GroupResource{Resource: "services"}, svc(corev1.ServiceTypeClusterIP), svc(corev1.ServiceTypeNodePort), true},
		{"service unchanged", schema.GroupResource{Resource: "services"}, svc(corev1.ServiceTypeClusterIP), svc(corev1.ServiceTypeClusterIP), false},
		{"claim resized", schema.GroupResource{Resource: "persistentvolumeclaims"}, claim("1Gi"), claim("2Gi"), true},
		{"configmap edited", configmapsGR, &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}}, false},
	}
	for _, tt := range tests {
		if got := UsageChanged(tt.gr, tt.old, tt.obj, now); got != tt.want {
			t.Errorf("%s: UsageChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type queued []string

func (q *queued) Add(key string) { *q = append(*q, key) }

// Only new quotas and changed limits are recounted at once: a status change is admission's
// charge (or this controller's write), which a recount from caches could undo.
func TestSpecChanged(t *testing.T) {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "2")}}
	charged := q.DeepCopy()
	charged.Status.Used = quotatest.List("pods", "1")
	raised := q.DeepCopy()
	raised.Spec.Hard = quotatest.List("pods", "3")
	var got queued
	h := specChanged(&got)
	h.OnUpdate(q, charged)
	if len(got) != 0 {
		t.Fatalf("a status change queued %v", got)
	}
	h.OnUpdate(q, raised)
	h.OnAdd(q)
	if d := cmp.Diff(queued{"ns/q", "ns/q"}, got); d != "" {
		t.Fatalf("queued (-want +got):\n%s", d)
	}
}
