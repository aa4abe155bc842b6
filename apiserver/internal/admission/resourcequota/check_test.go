package resourcequota

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/quota"
	"minik8s.io/shared/quota/quotatest"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// rq is a quota the controller has measured: hard in spec and status, and used.
func rq(name string, hard, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   corev1.ResourceQuotaSpec{Hard: hard, Scopes: scopes},
		Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func pod(requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
}

var (
	pods        = quota.For(schema.GroupResource{Resource: "pods"})
	services    = quota.For(schema.GroupResource{Resource: "services"})
	configmaps  = quota.For(schema.GroupResource{Resource: "configmaps"})
	deployments = quota.For(schema.GroupResource{Group: "apps", Resource: "deployments"})
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		e      quota.Evaluator
		w      Write
		// want maps each charged quota to its new status.used; refused is the 403's reason.
		want    map[string]string
		refused string
	}{
		{name: "no quota", e: pods, w: Write{Object: pod(nil, nil)}},
		{name: "a quota of other resources does not limit pods",
			quotas: []*corev1.ResourceQuota{rq("svc", quotatest.List("services", "1"), quotatest.List("services", "1"))},
			e:      pods, w: Write{Object: pod(nil, nil)}},
		{name: "within the quota",
			quotas: []*corev1.ResourceQuota{rq("compute", quotatest.List("pods", "3", "requests.cpu", "1", "limits.cpu", "2"), quotatest.List("pods", "1", "requests.cpu", "200m", "limits.cpu", "500m"))},
			e:      pods, w: Write{Object: pod(quotatest.List("cpu", "300m"), quotatest.List("cpu", "600m"))},
			want: map[string]string{"compute": "limits.cpu=1100m,pods=2,requests.cpu=500m"}},
		{name: "exceeded",
			quotas: []*corev1.ResourceQuota{rq("compute", quotatest.List("pods", "3", "requests.cpu", "1", "limits.cpu", "2"), quotatest.List("pods", "1", "requests.cpu", "800m", "limits.cpu", "1"))},
			e:      pods, w: Write{Object: pod(quotatest.List("cpu", "300m"), quotatest.List("cpu", "600m"))},
			refused: "exceeded quota: compute, requested: requests.cpu=300m, used: requests.cpu=800m, limited: requests.cpu=1"},
		{name: "every exceeded resource is named",
			quotas: []*corev1.ResourceQuota{rq("count", quotatest.List("pods", "1", "count/pods", "1"), quotatest.List("pods", "1", "count/pods", "1"))},
			e:      pods, w: Write{Object: pod(nil, nil)},
			refused: "exceeded quota: count, requested: count/pods=1,pods=1, used: count/pods=1,pods=1, limited: count/pods=1,pods=1"},
		{name: "a quota on limits needs every container to state them",
			quotas: []*corev1.ResourceQuota{rq("compute", quotatest.List("limits.cpu", "2", "limits.memory", "1Gi"), quotatest.List("limits.cpu", "0", "limits.memory", "0"))},
			e:      pods, w: Write{Object: pod(quotatest.List("cpu", "100m"), quotatest.List("memory", "64Mi"))},
			refused: "failed quota: compute: must specify limits.cpu for: app"},
		{name: "a quota the controller has not measured refuses",
			quotas: []*corev1.ResourceQuota{rq("fresh", quotatest.List("pods", "2"), nil)},
			e:      pods, w: Write{Object: pod(nil, nil)},
			refused: "status unknown for quota: fresh, resources: pods"},
		{name: "a quota with spec but no status yet does not apply",
			quotas: []*corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "new"}, Spec: corev1.ResourceQuotaSpec{Hard: quotatest.List("pods", "0")}}},
			e:      pods, w: Write{Object: pod(nil, nil)}},
		{name: "a BestEffort quota leaves other pods alone",
			quotas: []*corev1.ResourceQuota{rq("be", quotatest.List("pods", "0"), quotatest.List("pods", "0"), corev1.ResourceQuotaScopeBestEffort)},
			e:      pods, w: Write{Object: pod(quotatest.List("cpu", "1"), nil)}},
		{name: "and refuses best-effort pods",
			quotas: []*corev1.ResourceQuota{rq("be", quotatest.List("pods", "0"), quotatest.List("pods", "0"), corev1.ResourceQuotaScopeBestEffort)},
			e:      pods, w: Write{Object: pod(nil, nil)},
			refused: "exceeded quota: be, requested: pods=1, used: pods=0, limited: pods=0"},
		{name: "each quota that limits the object is charged",
			quotas: []*corev1.ResourceQuota{
				rq("a", quotatest.List("pods", "5"), quotatest.List("pods", "1")),
				rq("b", quotatest.List("count/pods", "5", "requests.memory", "1Gi"), quotatest.List("count/pods", "2", "requests.memory", "100Mi")),
				rq("c", quotatest.List("services", "5"), quotatest.List("services", "0")),
			},
			e: pods, w: Write{Object: pod(quotatest.List("memory", "100Mi"), nil)},
			want: map[string]string{"a": "pods=2", "b": "count/pods=3,requests.memory=200Mi"}},
		{name: "one quota exceeded refuses the write",
			quotas: []*corev1.ResourceQuota{rq("a", quotatest.List("pods", "5"), quotatest.List("pods", "1")), rq("b", quotatest.List("count/pods", "2"), quotatest.List("count/pods", "2"))},
			e:      pods, w: Write{Object: pod(nil, nil)},
			refused: "exceeded quota: b, requested: count/pods=1, used: count/pods=2, limited: count/pods=2"},
		{name: "configmaps count under both names",
			quotas: []*corev1.ResourceQuota{rq("objects", quotatest.List("configmaps", "10", "count/configmaps", "2"), quotatest.List("configmaps", "1", "count/configmaps", "1"))},
			e:      configmaps, w: Write{Object: &corev1.ConfigMap{}},
			want: map[string]string{"objects": "configmaps=2,count/configmaps=2"}},
		{name: "count/<resource>.<group>",
			quotas: []*corev1.ResourceQuota{rq("objects", quotatest.List("count/deployments.apps", "1"), quotatest.List("count/deployments.apps", "1"))},
			e:      deployments, w: Write{Object: &appsv1.Deployment{}},
			refused: "exceeded quota: objects, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"},
		{name: "updating a counted object charges nothing",
			quotas: []*corev1.ResourceQuota{rq("objects", quotatest.List("configmaps", "1"), quotatest.List("configmaps", "1"))},
			e:      configmaps, w: Write{Object: &corev1.ConfigMap{Data: map[string]string{"a": "b"}}, Old: &corev1.ConfigMap{}}},
		{name: "an update charges only what it adds",
			quotas: []*corev1.ResourceQuota{rq("svc", quotatest.List("services", "2", "services.nodeports", "3"), quotatest.List("services", "2", "services.nodeports", "1"))},
			e:      services,
			w: Write{Object: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}, {Port: 81}}}},
				Old: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}, {Port: 81}}}}},
			want: map[string]string{"svc": "services=2,services.nodeports=3"}},
		{name: "an update beyond the quota is refused",
			quotas: []*corev1.ResourceQuota{rq("svc", quotatest.List("services.loadbalancers", "0"), quotatest.List("services.loadbalancers", "0"))},
			e:      services,
			w: Write{Object: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
				Old: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}},
			refused: "exceeded quota: svc, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before []*corev1.ResourceQuota
			for _, q := range tt.quotas {
				before = append(before, q.DeepCopy())
			}
			charges, err := Check(tt.quotas, tt.e, tt.w, now)
			var refusal *Refusal
			switch {
			case tt.refused != "":
				if !errors.As(err, &refusal) || refusal.Reason != tt.refused {
					t.Fatalf("Check = %v\nwant refusal %q", err, tt.refused)
				}
				return
			case err != nil:
				t.Fatalf("Check: %v", err)
			}
			got := map[string]string{}
			for _, c := range charges {
				got[c.Quota.Name] = quota.String(c.Quota.Status.Used)
				if want := quota.Add(quotaNamed(before, c.Quota.Name).Status.Used, c.Delta); !quota.Equals(want, c.Quota.Status.Used) {
					t.Errorf("%s: delta %s does not account for the raise", c.Quota.Name, quota.String(c.Delta))
				}
			}
			if tt.want == nil {
				tt.want = map[string]string{}
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("charges (-want +got):\n%s", d)
			}
			if d := cmp.Diff(before, tt.quotas); d != "" {
				t.Errorf("Check changed its input:\n%s", d)
			}
		})
	}
}

func quotaNamed(qs []*corev1.ResourceQuota, name string) *corev1.ResourceQuota {
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	return nil
}
