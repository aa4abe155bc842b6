package reconcile

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

func TestChildren(t *testing.T) {
	ctx := t.Context()
	pods := fake.New(func() *corev1.Pod { return &corev1.Pod{} })
	events := record.NewFake(100)
	var exp Expectations
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ch := Children[*corev1.Pod]{Writer: pods, Expectations: &exp, Recorder: events, Clock: clk}
	owner := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}}
	newPod := func(i int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p" + string(rune('a'+i))}}
	}

	made, err := ch.Create(ctx, owner, "ns/j", 3, newPod)
	if err != nil || made != 3 || len(pods.Objects()) != 3 {
		t.Fatalf("Create 3 = %d, %v with %d pods stored; want 3 made", made, err, len(pods.Objects()))
	}
	if exp.Satisfied("ns/j", clk.Now()) {
		t.Error("expectations satisfied before the cache saw the creations")
	}
	for range 3 {
		exp.CreationObserved("ns/j")
	}
	if !exp.Satisfied("ns/j", clk.Now()) {
		t.Error("expectations not satisfied once the cache saw the three pods")
	}

	// A failed create stops the slow start: what failed and what was never asked for are
	// observed at once, so the next sync is not held up.
	pods.FailNext(fake.VerbCreate, apierror.New(apierror.ErrForbidden, "quota"))
	made, err = ch.Create(ctx, owner, "ns/j2", 4, func(i int) *corev1.Pod { return newPod(i + 10) })
	if err == nil || made != 0 || !strings.Contains(err.Error(), "0 of 4 made") {
		t.Errorf("Create after a refused create = %d, %v; want 0 made and the count in the error", made, err)
	}
	if !exp.Satisfied("ns/j2", clk.Now()) {
		adds, dels := exp.Pending("ns/j2")
		t.Errorf("after a failed batch %d creations and %d deletions still expected, want none", adds, dels)
	}

	// A deletion is guarded by the uid: a pod replaced under the same name is no failure.
	list := pods.Objects()
	replaced := list[0].DeepCopy()
	replaced.UID = "an older pod"
	if err := ch.Delete(ctx, owner, "ns/j", []*corev1.Pod{replaced, list[1]}); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if _, ok := pods.Object("ns", list[0].Name); !ok {
		t.Error("the pod of the same name but another uid was deleted")
	}
	if _, ok := pods.Object("ns", list[1].Name); ok {
		t.Error("the pod was not deleted")
	}
	pods.FailNext(fake.VerbDelete, apierror.New(apierror.ErrUnavailable, "down"))
	if err := ch.Delete(ctx, owner, "ns/j", []*corev1.Pod{list[2]}); !errors.Is(err, apierror.ErrUnavailable) {
		t.Errorf("Delete while the API is down = %v, want the error", err)
	}

	var got []string
	for len(events.Events) > 0 {
		got = append(got, <-events.Events)
	}
	want := map[string]int{"Normal SuccessfulCreate": 3, "Warning FailedCreate": 1, "Normal SuccessfulDelete": 1, "Warning FailedDelete": 1}
	for prefix, n := range want {
		c := 0
		for _, e := range got {
			if strings.HasPrefix(e, prefix+" ") {
				c++
			}
		}
		if c != n {
			t.Errorf("%d %q events, want %d; all: %q", c, prefix, n, got)
		}
	}
}
