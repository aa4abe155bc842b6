package limitranger

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/quota/quotatest"
)

func limitRange(name string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: containers}}
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func TestDefault(t *testing.T) {
	defaults := limitRange("defaults", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: quotatest.List("cpu", "500m", "memory", "256Mi"), DefaultRequest: quotatest.List("cpu", "100m", "memory", "128Mi")})
	tests := []struct {
		name       string
		pod        *corev1.Pod
		ranges     []*corev1.LimitRange
		requests   []map[string]string
		limits     []map[string]string
		annotation string
	}{
		{"a bare container gets every default", pod(container("app", nil, nil)), []*corev1.LimitRange{defaults},
			[]map[string]string{{"cpu": "100m", "memory": "128Mi"}}, []map[string]string{{"cpu": "500m", "memory": "256Mi"}},
			"LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"},
		{"what a container states is kept", pod(container("app", quotatest.List("cpu", "50m"), quotatest.List("cpu", "1")), container("side", quotatest.List("cpu", "10m", "memory", "1Mi"), quotatest.List("cpu", "10m", "memory", "1Mi"))),
			[]*corev1.LimitRange{defaults},
			[]map[string]string{{"cpu": "50m", "memory": "128Mi"}, {"cpu": "10m", "memory": "1Mi"}},
			[]map[string]string{{"cpu": "1", "memory": "256Mi"}, {"cpu": "10m", "memory": "1Mi"}},
			"LimitRanger plugin set: memory request for container app; memory limit for container app"},
		{"Pod and claim items give no defaults", pod(container("app", nil, nil)),
			[]*corev1.LimitRange{limitRange("pods", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: quotatest.List("cpu", "2")})},
			[]map[string]string{nil}, []map[string]string{nil}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.pod.DeepCopy()
			Default(p, tt.ranges)
			var requests, limits []map[string]string
			for _, c := range p.Spec.Containers {
				requests = append(requests, quotatest.Printed(c.Resources.Requests))
				limits = append(limits, quotatest.Printed(c.Resources.Limits))
			}
			if d := cmp.Diff(tt.requests, requests); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.limits, limits); d != "" {
				t.Errorf("limits (-want +got):\n%s", d)
			}
			if got := p.Annotations[Annotation]; got != tt.annotation {
				t.Errorf("annotation %q, want %q", got, tt.annotation)
			}
		})
	}
}

func TestDefaultInitContainers(t *testing.T) {
	p := pod(container("app", nil, nil))
	p.Spec.InitContainers = []corev1.Container{container("setup", nil, nil)}
	Default(p, []*corev1.LimitRange{limitRange("d", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: quotatest.List("cpu", "100m")})})
	if want := "LimitRanger plugin set: cpu request for container app; cpu request for init container setup"; p.Annotations[Annotation] != want {
		t.Errorf("annotation %q, want %q", p.Annotations[Annotation], want)
	}
}

func TestValidatePod(t *testing.T) {
	bounded := limitRange("bounds", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Min: quotatest.List("cpu", "100m"), Max: quotatest.List("cpu", "1", "memory", "1Gi"), MaxLimitRequestRatio: quotatest.List("cpu", "4")})
	perPod := limitRange("per-pod", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: quotatest.List("memory", "1Gi")})
	tests := []struct {
		name   string
		pod    *corev1.Pod
		ranges []*corev1.LimitRange
		want   string
	}{
		{"within bounds", pod(container("app", quotatest.List("cpu", "200m", "memory", "64Mi"), quotatest.List("cpu", "400m", "memory", "128Mi"))), []*corev1.LimitRange{bounded}, ""},
		{"below the minimum request", pod(container("app", quotatest.List("cpu", "50m", "memory", "64Mi"), quotatest.List("cpu", "100m", "memory", "64Mi"))), []*corev1.LimitRange{bounded},
			"minimum cpu usage per Container is 100m, but request is 50m"},
		{"no request where a minimum applies", pod(container("app", quotatest.List("memory", "64Mi"), quotatest.List("cpu", "1", "memory", "64Mi"))), []*corev1.LimitRange{bounded},
			"[minimum cpu usage per Container is 100m.  No request is specified, cpu max limit to request ratio per Container is 4, but no request is specified or request is 0]"},
		{"above the maximum limit", pod(container("app", quotatest.List("cpu", "1", "memory", "64Mi"), quotatest.List("cpu", "2", "memory", "64Mi"))), []*corev1.LimitRange{bounded},
			"maximum cpu usage per Container is 1, but limit is 2"},
		{"no limit where a maximum applies", pod(container("app", quotatest.List("cpu", "200m", "memory", "64Mi"), quotatest.List("cpu", "200m"))), []*corev1.LimitRange{bounded},
			"maximum memory usage per Container is 1Gi.  No limit is specified"},
		{"limit too far above the request", pod(container("app", quotatest.List("cpu", "100m", "memory", "64Mi"), quotatest.List("cpu", "800m", "memory", "64Mi"))), []*corev1.LimitRange{bounded},
			"cpu max limit to request ratio per Container is 4, but provided ratio is 8.000000"},
		{"a pod's containers add up", pod(container("a", quotatest.List("memory", "600Mi"), quotatest.List("memory", "600Mi")), container("b", quotatest.List("memory", "600Mi"), quotatest.List("memory", "600Mi"))),
			[]*corev1.LimitRange{perPod}, "maximum memory usage per Pod is 1Gi, but limit is 1200Mi"},
		{"the first range broken decides", pod(container("a", quotatest.List("cpu", "10m", "memory", "2Gi"), quotatest.List("cpu", "10m", "memory", "2Gi"))),
			[]*corev1.LimitRange{perPod, bounded},
			"[minimum cpu usage per Container is 100m, but request is 10m, maximum memory usage per Container is 1Gi, but limit is 2Gi]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePod(tt.pod, tt.ranges)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("ValidatePod = %q\nwant          %q", got, tt.want)
			}
		})
	}
}

func TestPodTotalCountsSidecarsAndInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := pod(container("app", quotatest.List("cpu", "100m"), nil))
	side := container("side", quotatest.List("cpu", "50m"), nil)
	side.RestartPolicy = &always
	p.Spec.InitContainers = []corev1.Container{side, container("migrate", quotatest.List("cpu", "500m"), nil)}
	got := podTotal(p, requestsOf)
	if q := got[corev1.ResourceCPU]; q.String() != "550m" {
		t.Errorf("pod cpu request %s, want 550m (the init container beside the sidecar)", q.String())
	}
}

func TestValidateClaim(t *testing.T) {
	lr := limitRange("storage", corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: quotatest.List("storage", "1Gi"), Max: quotatest.List("storage", "10Gi")})
	claim := func(storage string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		if storage != "" {
			c.Spec.Resources.Requests = quotatest.List("storage", storage)
		}
		return c
	}
	tests := []struct{ storage, want string }{
		{"5Gi", ""},
		{"500Mi", "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"},
		{"20Gi", "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"},
		{"", "[minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]"},
	}
	for _, tt := range tests {
		err := ValidateClaim(claim(tt.storage), []*corev1.LimitRange{lr})
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("claim of %q: %q, want %q", tt.storage, got, tt.want)
		}
	}
}
