package disruption

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var now = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

func pod(name string, isReady bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if isReady {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func budget(min, maxU *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: min, MaxUnavailable: maxU}}
}

func v(x intstr.IntOrString) *intstr.IntOrString { return &x }

func TestStatus(t *testing.T) {
	three := []*corev1.Pod{pod("a", true), pod("b", true), pod("c", true)}
	deleting := pod("c", true)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	cases := []struct {
		name                                   string
		pdb                                    *policyv1.PodDisruptionBudget
		pods                                   []*corev1.Pod
		expected                               Expected
		wantHealthy, wantDesired, wantExpected int32
		wantAllowed                            int32
		wantReason                             string
	}{
		{name: "integer minAvailable counts the pods", pdb: budget(v(intstr.FromInt32(2)), nil), pods: three,
			expected: Expected{Err: errors.New("found no controllers")}, wantHealthy: 3, wantDesired: 2, wantExpected: 3, wantAllowed: 1, wantReason: policyv1.SufficientPodsReason},
		{name: "budget holds", pdb: budget(v(intstr.FromInt32(3)), nil), pods: three,
			wantHealthy: 3, wantDesired: 3, wantExpected: 3, wantAllowed: 0, wantReason: policyv1.InsufficientPodsReason},
		{name: "unready and deleting pods are not healthy", pdb: budget(v(intstr.FromInt32(1)), nil),
			pods: []*corev1.Pod{pod("a", true), pod("b", false), deleting}, wantHealthy: 1, wantDesired: 1, wantExpected: 3, wantReason: policyv1.InsufficientPodsReason},
		{name: "percent of the controllers' replicas, rounded up", pdb: budget(v(intstr.FromString("50%")), nil), pods: three,
			expected: Expected{Count: 5}, wantHealthy: 3, wantDesired: 3, wantExpected: 5, wantReason: policyv1.InsufficientPodsReason},
		{name: "maxUnavailable", pdb: budget(nil, v(intstr.FromInt32(1))), pods: three,
			expected: Expected{Count: 3}, wantHealthy: 3, wantDesired: 2, wantExpected: 3, wantAllowed: 1, wantReason: policyv1.SufficientPodsReason},
		{name: "maxUnavailable without controllers fails", pdb: budget(nil, v(intstr.FromInt32(1))), pods: three,
			expected: Expected{Err: errors.New("found no controllers for pod \"a\"")}, wantReason: policyv1.SyncFailedReason},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := Status(tc.pdb, tc.pods, tc.expected, now)
			if st.CurrentHealthy != tc.wantHealthy || st.DesiredHealthy != tc.wantDesired || st.ExpectedPods != tc.wantExpected || st.DisruptionsAllowed != tc.wantAllowed {
				t.Errorf("healthy %d/%d expected %d allowed %d, want %d/%d %d %d", st.CurrentHealthy, st.DesiredHealthy, st.ExpectedPods, st.DisruptionsAllowed,
					tc.wantHealthy, tc.wantDesired, tc.wantExpected, tc.wantAllowed)
			}
			if st.ObservedGeneration != 2 || len(st.Conditions) != 1 || st.Conditions[0].Reason != tc.wantReason {
				t.Errorf("generation %d conditions %+v, want reason %s", st.ObservedGeneration, st.Conditions, tc.wantReason)
			}
		})
	}
}

// A pod an eviction recorded is not healthy until the record times out, and the record goes
// with the pod.
func TestDisruptedPods(t *testing.T) {
	pdb := budget(v(intstr.FromInt32(1)), nil)
	pdb.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-time.Minute)), "gone": metav1.NewTime(now)}
	pods := []*corev1.Pod{pod("a", true), pod("b", true)}
	st, recheck := Status(pdb, pods, Expected{}, now)
	if st.CurrentHealthy != 1 || st.DisruptionsAllowed != 0 || len(st.DisruptedPods) != 1 || !recheck.Equal(now.Add(time.Minute)) {
		t.Fatalf("while evicting: %+v, recheck %v", st, recheck)
	}
	st, recheck = Status(pdb, pods, Expected{}, now.Add(time.Minute))
	if st.CurrentHealthy != 2 || st.DisruptionsAllowed != 1 || st.DisruptedPods != nil || !recheck.IsZero() {
		t.Fatalf("after the timeout: %+v, recheck %v", st, recheck)
	}
}
