package podautoscaler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// podSpec describes a test pod: its state and its CPU request (1 core unless set).
type podSpec struct {
	phase      corev1.PodPhase // Running unless set
	notReady   bool
	started    time.Duration // before now; 10 min unless set
	readySince time.Duration // before now; since start unless set
	deleting   bool
	noRequest  bool
}

func makePods(now time.Time, specs ...podSpec) []*corev1.Pod {
	var out []*corev1.Pod
	for i, s := range specs {
		if s.phase == "" {
			s.phase = corev1.PodRunning
		}
		if s.started == 0 {
			s.started = 10 * time.Minute
		}
		if s.readySince == 0 {
			s.readySince = s.started
		}
		ready := corev1.ConditionTrue
		if s.notReady {
			ready = corev1.ConditionFalse
		}
		start := metav1.NewTime(now.Add(-s.started))
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "ns", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("100Mi")}}}}},
			Status: corev1.PodStatus{Phase: s.phase, StartTime: &start, Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(now.Add(-s.readySince))}}},
		}
		if s.noRequest {
			p.Spec.Containers[0].Resources.Requests = nil
		}
		if s.deleting {
			p.DeletionTimestamp = &start
		}
		if s.phase == corev1.PodPending {
			p.Status.StartTime = nil
		}
		out = append(out, p)
	}
	return out
}

func ready(n int) []podSpec { return make([]podSpec, n) }

// usage gives pods p0.. the samples in milli-units, taken 5 s ago over 15 s; -1 leaves a pod
// without a sample.
func usage(now time.Time, values ...int64) PodMetrics {
	m := PodMetrics{}
	for i, v := range values {
		if v >= 0 {
			m[fmt.Sprintf("p%d", i)] = PodMetric{Value: v, Timestamp: now.Add(-5 * time.Second), Window: 15 * time.Second}
		}
	}
	return m
}

func TestUtilizationReplicas(t *testing.T) {
	now := t0
	for _, c := range []struct {
		name    string
		current int32
		pods    []podSpec
		metrics PodMetrics
		want    int32
		wantU   int32
		wantErr string
	}{
		{"at target", 3, ready(3), usage(now, 500, 500, 500), 3, 50, ""},
		{"within tolerance above", 3, ready(3), usage(now, 540, 540, 540), 3, 54, ""},
		{"within tolerance below", 3, ready(3), usage(now, 460, 460, 460), 3, 46, ""},
		{"just past tolerance", 3, ready(3), usage(now, 560, 560, 560), 4, 56, ""},
		{"double the target", 3, ready(3), usage(now, 1000, 1000, 1000), 6, 100, ""},
		{"far below", 4, ready(4), usage(now, 100, 100, 100, 100), 1, 10, ""},
		{"missing pod counts as idle when scaling up", 3, ready(3), usage(now, 1000, 1000, -1), 4, 100, ""},
		{"missing pod counts as full when scaling down", 4, ready(4), usage(now, 0, 0, 0, -1), 2, 0, ""},
		{"missing pod blocks a small scale-down", 3, ready(3), usage(now, 100, 100, -1), 3, 10, ""},
		{"pending pods count as idle when scaling up", 6,
			[]podSpec{{}, {}, {}, {phase: corev1.PodPending}, {phase: corev1.PodPending}, {phase: corev1.PodPending}},
			usage(now, 1000, 1000, 1000), 6, 100, ""},
		{"not ready pods are ignored when scaling down", 4,
			[]podSpec{{}, {}, {notReady: true, started: time.Minute}, {notReady: true, started: time.Minute}},
			usage(now, 100, 100, 900, 900), 1, 10, ""},
		{"a sample from before readiness in the initialization period is not trusted", 2,
			[]podSpec{{}, {started: time.Minute, readySince: 8 * time.Second}},
			usage(now, 500, 3000), 2, 50, ""},
		{"the same sample after readiness counts", 2,
			[]podSpec{{}, {started: time.Minute, readySince: 40 * time.Second}},
			usage(now, 500, 3000), 7, 175, ""},
		{"failed and deleting pods are ignored", 3,
			[]podSpec{{}, {phase: corev1.PodFailed}, {deleting: true}},
			usage(now, 500, 5000, 5000), 3, 50, ""},
		{"no pods", 1, nil, nil, 0, 0, "no pods returned by selector"},
		{"no request", 2, []podSpec{{}, {noRequest: true}}, usage(now, 500, 500), 0, 0, "missing request for cpu in container c of Pod p1"},
		{"every pod unready", 2, []podSpec{{phase: corev1.PodPending}, {phase: corev1.PodPending}}, usage(now), 0, 0, "did not receive metrics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			est, err := UtilizationReplicas(c.current, 50, corev1.ResourceCPU, makePods(now, c.pods...), c.metrics, now)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("want error %q, got %v (%+v)", c.wantErr, err, est)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if est.Replicas != c.want || est.Utilization != c.wantU {
				t.Errorf("want %d replicas at %d%%, got %d at %d%%", c.want, c.wantU, est.Replicas, est.Utilization)
			}
		})
	}
}

func TestAverageValueReplicas(t *testing.T) {
	now := t0
	mi := int64(1 << 20 * 1000) // a MiB in milli-units
	for _, c := range []struct {
		name     string
		resource corev1.ResourceName
		current  int32
		target   int64
		metrics  PodMetrics
		want     int32
		wantAvg  int64
	}{
		{"cpu twice the target", corev1.ResourceCPU, 2, 200, usage(now, 400, 400), 4, 400},
		{"cpu within tolerance", corev1.ResourceCPU, 2, 200, usage(now, 210, 190), 2, 200},
		{"memory below", corev1.ResourceMemory, 4, 100 * mi, usage(now, 20*mi, 20*mi, 20*mi, 20*mi), 1, 20 * mi},
		{"memory missing pod at target on scale-down", corev1.ResourceMemory, 4, 100 * mi, usage(now, 20*mi, 20*mi, 20*mi, -1), 2, 20 * mi},
	} {
		t.Run(c.name, func(t *testing.T) {
			est, err := AverageValueReplicas(c.current, c.target, c.resource, makePods(now, ready(int(c.current))...), c.metrics, now)
			if err != nil {
				t.Fatal(err)
			}
			if est.Replicas != c.want || est.Usage != c.wantAvg {
				t.Errorf("want %d replicas at %d, got %d at %d", c.want, c.wantAvg, est.Replicas, est.Usage)
			}
		})
	}
}
