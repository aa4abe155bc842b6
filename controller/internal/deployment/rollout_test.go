package deployment

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// world plays the apiserver and the ReplicaSet controller around Decide: it applies each plan
// and then, in settle, makes every ReplicaSet's pods exist (and be available when ready
// says so), as the next syncs would see them.
type world struct {
	d     *appsv1.Deployment
	rss   []*appsv1.ReplicaSet
	pods  []*corev1.Pod
	now   time.Time
	plans []Plan
}

func (w *world) step(t *testing.T) Plan {
	t.Helper()
	p := Decide(Input{Deployment: w.d, ReplicaSets: w.rss, Pods: w.pods, Now: w.now})
	if p.Create != nil {
		rs := p.Create.DeepCopy()
		rs.UID = types.UID(rs.Name)
		rs.CreationTimestamp = metav1.NewTime(w.now)
		w.rss = append(w.rss, rs)
	}
	for _, u := range p.Update {
		i := slices.IndexFunc(w.rss, func(rs *appsv1.ReplicaSet) bool { return rs.Name == u.Name })
		if i < 0 {
			t.Fatalf("update of unknown ReplicaSet %s", u.Name)
		}
		w.rss[i] = u.DeepCopy()
	}
	for _, del := range p.Delete {
		w.rss = slices.DeleteFunc(w.rss, func(rs *appsv1.ReplicaSet) bool { return rs.Name == del.Name })
	}
	if p.Revision != "" {
		if w.d.Annotations == nil {
			w.d.Annotations = map[string]string{}
		}
		w.d.Annotations[RevisionAnnotation] = p.Revision
	}
	if p.Status != nil {
		w.d.Status = *p.Status
	}
	w.plans = append(w.plans, p)
	return p
}

// settle gives every ReplicaSet its pods; those of ReplicaSets ready says yes to are available.
func (w *world) settle(ready func(rs *appsv1.ReplicaSet) bool) {
	for _, rs := range w.rss {
		n := *rs.Spec.Replicas
		rs.Status.Replicas, rs.Status.ObservedGeneration = n, rs.Generation
		rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = 0, 0
		if ready(rs) {
			rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = n, n
		}
	}
}

func (w *world) byImage(image string) *appsv1.ReplicaSet {
	for _, rs := range w.rss {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			return rs
		}
	}
	return nil
}

func (w *world) sizes() map[string]int32 {
	out := map[string]int32{}
	for _, rs := range w.rss {
		out[rs.Spec.Template.Spec.Containers[0].Image] = *rs.Spec.Replicas
	}
	return out
}

func always(*appsv1.ReplicaSet) bool { return true }

// rolledOut starts a world whose Deployment runs image a, complete.
func rolledOut(t *testing.T, d *appsv1.Deployment) *world {
	t.Helper()
	w := &world{d: d, now: t0}
	for range 10 {
		w.step(t)
		w.settle(always)
	}
	if rs := w.byImage("echo:a"); rs == nil || *rs.Spec.Replicas != *d.Spec.Replicas {
		t.Fatalf("first rollout did not finish: %v", w.sizes())
	}
	return w
}

func setImage(w *world, image string) {
	w.d.Spec.Template.Spec.Containers[0].Image = image
	w.d.Generation++
}

// TestRollingUpdateBounds rolls a Deployment from a to b for several surge and
// unavailability settings with pods available at once, and checks at every step that the
// pods never exceed replicas + maxSurge nor the available ones drop below
// replicas - maxUnavailable, and that it ends with every pod of b, revision 2, complete.
func TestRollingUpdateBounds(t *testing.T) {
	tests := []struct {
		replicas           int32
		surge, unavailable string
	}{
		{10, "25%", "25%"}, {3, "1", "0"}, {3, "0", "1"}, {5, "100%", "0"}, {4, "0", "100%"}, {1, "25%", "25%"}, {7, "30%", "10%"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s_%s", tt.replicas, tt.surge, tt.unavailable), func(t *testing.T) {
			w := rolledOut(t, newDeployment(tt.replicas, tt.surge, tt.unavailable))
			surge, unavailable := MaxSurge(w.d), MaxUnavailable(w.d)
			setImage(w, "echo:b")
			done := false
			for i := 0; i < 50 && !done; i++ {
				w.now = w.now.Add(time.Second)
				w.step(t)
				var total, available int32
				for _, rs := range w.rss {
					total += *rs.Spec.Replicas
					available += min(*rs.Spec.Replicas, rs.Status.AvailableReplicas)
				}
				if total > tt.replicas+surge {
					t.Fatalf("step %d: %d pods, more than %d + %d: %v", i, total, tt.replicas, surge, w.sizes())
				}
				if available < tt.replicas-unavailable {
					t.Fatalf("step %d: %d available, fewer than %d - %d: %v", i, available, tt.replicas, unavailable, w.sizes())
				}
				w.settle(always)
				c := condition(w.d.Status, appsv1.DeploymentProgressing)
				done = c != nil && c.Reason == ReasonNewRSAvailable && w.d.Status.UpdatedReplicas == tt.replicas && w.d.Status.Replicas == tt.replicas
			}
			if !done {
				t.Fatalf("rollout not complete after 50 steps: %v, status %+v", w.sizes(), w.d.Status)
			}
			if diff := cmp.Diff(map[string]int32{"echo:a": 0, "echo:b": tt.replicas}, w.sizes()); diff != "" {
				t.Errorf("sizes (-want +got):\n%s", diff)
			}
			if w.d.Annotations[RevisionAnnotation] != "2" || w.byImage("echo:b").Annotations[RevisionAnnotation] != "2" {
				t.Errorf("revision %q, new ReplicaSet's %q, want 2", w.d.Annotations[RevisionAnnotation], w.byImage("echo:b").Annotations[RevisionAnnotation])
			}
			a := condition(w.d.Status, appsv1.DeploymentAvailable)
			if a == nil || a.Status != corev1.ConditionTrue || a.Reason != ReasonMinimumAvailable {
				t.Errorf("Available condition %+v", a)
			}
		})
	}
}

// TestRollingUpdateSteps pins the first steps of a rollout whose new pods never become
// available: how far the surge and the unavailability budget let it go, and no further.
func TestRollingUpdateSteps(t *testing.T) {
	tests := []struct {
		replicas           int32
		surge, unavailable string
		want               []map[string]int32 // sizes after each step
	}{
		{10, "25%", "25%", []map[string]int32{
			// Created at the surge (10 + ceil(2.5)), old down by floor(2.5) in the same sync.
			{"echo:a": 8, "echo:b": 3},
			{"echo:a": 8, "echo:b": 5}, // new up to the surge again
			{"echo:a": 8, "echo:b": 5}, // stuck: nothing new is available
		}},
		{3, "1", "0", []map[string]int32{
			{"echo:a": 3, "echo:b": 1},
			{"echo:a": 3, "echo:b": 1}, // no unavailability allowed: waits for b
		}},
		{3, "0", "1", []map[string]int32{
			{"echo:a": 2, "echo:b": 0}, // no surge: created empty, old down by one
			{"echo:a": 2, "echo:b": 1},
			{"echo:a": 2, "echo:b": 1},
		}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s_%s", tt.replicas, tt.surge, tt.unavailable), func(t *testing.T) {
			w := rolledOut(t, newDeployment(tt.replicas, tt.surge, tt.unavailable))
			setImage(w, "echo:b")
			for i, want := range tt.want {
				w.step(t)
				w.settle(func(rs *appsv1.ReplicaSet) bool { return rs.Spec.Template.Spec.Containers[0].Image == "echo:a" })
				if diff := cmp.Diff(want, w.sizes()); diff != "" {
					t.Fatalf("step %d (-want +got):\n%s", i, diff)
				}
			}
			c := condition(w.d.Status, appsv1.DeploymentProgressing)
			if c == nil || c.Status != corev1.ConditionTrue || c.Reason == ReasonNewRSAvailable {
				t.Errorf("Progressing %+v, want True and not complete", c)
			}
			// Past the deadline with no progress: ProgressDeadlineExceeded.
			w.now = w.now.Add(601 * time.Second)
			w.step(t)
			c = condition(w.d.Status, appsv1.DeploymentProgressing)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonTimedOut || c.Message != fmt.Sprintf("ReplicaSet %q has timed out progressing.", w.byImage("echo:b").Name) {
				t.Errorf("after the deadline Progressing %+v", c)
			}
		})
	}
}

func TestRecreate(t *testing.T) {
	d := newDeployment(3, "0", "1")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	w := rolledOut(t, d)
	old := w.byImage("echo:a")
	setImage(w, "echo:b")
	w.step(t)
	if diff := cmp.Diff(map[string]int32{"echo:a": 0}, w.sizes()); diff != "" {
		t.Fatalf("first step (-want +got):\n%s", diff)
	}
	// The old pods are terminating: nothing new yet.
	yes := true
	w.pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "old-1", DeletionTimestamp: &metav1.Time{Time: t0},
		OwnerReferences: []metav1.OwnerReference{{UID: old.UID, Controller: &yes}}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
	w.settle(always)
	if p := w.step(t); p.Create != nil {
		t.Fatal("new ReplicaSet created while an old pod is still running")
	}
	w.pods = nil
	w.step(t)
	if diff := cmp.Diff(map[string]int32{"echo:a": 0, "echo:b": 3}, w.sizes()); diff != "" {
		t.Fatalf("after the old pods went (-want +got):\n%s", diff)
	}
}

func TestHistoryCleanup(t *testing.T) {
	d := newDeployment(2, "1", "0")
	d.Spec.RevisionHistoryLimit = ptr(int32(1))
	w := rolledOut(t, d)
	for _, img := range []string{"echo:b", "echo:c", "echo:d"} {
		setImage(w, img)
		for range 10 {
			w.now = w.now.Add(time.Second)
			w.step(t)
			w.settle(always)
		}
	}
	if diff := cmp.Diff(map[string]int32{"echo:c": 0, "echo:d": 2}, w.sizes()); diff != "" {
		t.Errorf("ReplicaSets left with a history of 1 (-want +got):\n%s", diff)
	}
	if got := w.byImage("echo:d").Annotations[RevisionAnnotation]; got != "4" {
		t.Errorf("revision %s, want 4", got)
	}
	// Rolling back to c: c becomes revision 5 and remembers 3; no new ReplicaSet.
	setImage(w, "echo:c")
	for range 10 {
		w.now = w.now.Add(time.Second)
		w.step(t)
		w.settle(always)
	}
	c := w.byImage("echo:c")
	if len(w.rss) != 2 || c.Annotations[RevisionAnnotation] != "5" || c.Annotations[RevisionHistoryAnnotation] != "3" || *c.Spec.Replicas != 2 {
		t.Errorf("after rollback: %v, c's annotations %v", w.sizes(), c.Annotations)
	}
}

func TestPausedAndScaling(t *testing.T) {
	w := rolledOut(t, newDeployment(10, "25%", "25%"))
	w.d.Spec.Paused = true
	setImage(w, "echo:b")
	p := w.step(t)
	if p.Create != nil || len(p.Update) != 0 {
		t.Fatalf("a paused Deployment rolled: %+v", p)
	}
	if c := condition(w.d.Status, appsv1.DeploymentProgressing); c == nil || c.Status != corev1.ConditionUnknown || c.Reason != ReasonPaused {
		t.Errorf("paused Progressing %+v", c)
	}
	w.d.Spec.Replicas = ptr(int32(12))
	w.step(t)
	if diff := cmp.Diff(map[string]int32{"echo:a": 12}, w.sizes()); diff != "" {
		t.Errorf("scaling while paused (-want +got):\n%s", diff)
	}
	w.settle(always)
	w.d.Spec.Paused = false
	w.d.Spec.Replicas = ptr(int32(10))
	w.step(t)
	w.settle(func(rs *appsv1.ReplicaSet) bool { return rs.Spec.Template.Spec.Containers[0].Image == "echo:a" })
	if c := condition(w.d.Status, appsv1.DeploymentProgressing); c == nil || c.Reason == ReasonPaused {
		t.Errorf("resumed Progressing %+v", c)
	}
	// Mid-rollout (a: 10, b: 3 after the scale-down to 10 settles) the Deployment is scaled
	// to 20: the new pods are shared in proportion.
	for range 3 {
		w.step(t)
		w.settle(func(rs *appsv1.ReplicaSet) bool { return rs.Spec.Template.Spec.Containers[0].Image == "echo:a" })
	}
	before := w.sizes()
	if before["echo:a"] == 0 || before["echo:b"] == 0 {
		t.Fatalf("not mid-rollout: %v", before)
	}
	w.d.Spec.Replicas = ptr(int32(20))
	w.step(t)
	after := w.sizes()
	if after["echo:a"]+after["echo:b"] != 20+MaxSurge(w.d) {
		t.Errorf("scaled %v to %v: want %d in all", before, after, 20+MaxSurge(w.d))
	}
	if after["echo:a"] <= before["echo:a"] || after["echo:b"] <= before["echo:b"] {
		t.Errorf("scaled %v to %v: both should grow", before, after)
	}
}

func TestProportionalScaling(t *testing.T) {
	d := newDeployment(20, "25%", "25%")
	d.Status.Replicas = 13
	old := rsAt("old", 1, 8, 8, 0)
	cur := NewReplicaSet(newDeployment(10, "25%", "25%"), 2)
	cur.Spec.Replicas = ptr(int32(5))
	cur.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
	for _, rs := range []*appsv1.ReplicaSet{old, cur} {
		rs.Annotations[DesiredReplicasAnnotation], rs.Annotations[MaxReplicasAnnotation] = "10", "13"
	}
	w := &world{d: d, rss: []*appsv1.ReplicaSet{old, cur}, now: t0}
	w.step(t)
	// 25 allowed, 12 to add: old gets round(8*25/13)-8 = 7, new round(5*25/13)-5 = 5.
	if diff := cmp.Diff(map[string]int32{"old:old": 15, "echo:a": 10}, w.sizes()); diff != "" {
		t.Errorf("sizes (-want +got):\n%s", diff)
	}
	for _, rs := range w.rss {
		if rs.Annotations[DesiredReplicasAnnotation] != "20" || rs.Annotations[MaxReplicasAnnotation] != "25" {
			t.Errorf("%s annotations %v", rs.Name, rs.Annotations)
		}
	}
}
