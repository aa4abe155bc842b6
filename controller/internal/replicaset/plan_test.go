package replicaset

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newRS(replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid", Generation: 3},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}, Annotations: map[string]string{"a": "b"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}},
			},
		},
	}
}

// pod builds a pod from options.
func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
		Labels: map[string]string{"app": "web", "tier": "front"}, CreationTimestamp: metav1.NewTime(t0)},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(uid types.UID) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "x", UID: uid, Controller: &yes})
	}
}

func labelled(l map[string]string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels = l } }
func onNode(n string) func(*corev1.Pod)              { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func phase(ph corev1.PodPhase) func(*corev1.Pod)     { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func created(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t0.Add(d)) }
}
func restarted(n int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: n}}
	}
}
func readyAt(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(d))}}
	}
}
func deleting(p *corev1.Pod) { now := metav1.NewTime(t0); p.DeletionTimestamp = &now }

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestClaim(t *testing.T) {
	other := map[string]string{"app": "other"}
	pods := []*corev1.Pod{
		pod("mine", ownedBy("rs-uid")),
		pod("mine-relabelled", ownedBy("rs-uid"), labelled(other)),
		pod("mine-dead", ownedBy("rs-uid"), phase(corev1.PodFailed)),
		pod("mine-terminating", ownedBy("rs-uid"), deleting),
		pod("orphan"),
		pod("orphan-other-labels", labelled(other)),
		pod("orphan-done", phase(corev1.PodSucceeded)),
		pod("orphan-terminating", deleting),
		pod("someone-elses", ownedBy("other-uid")),
		pod("extra-labels", labelled(map[string]string{"app": "web", "x": "y"})),
	}
	tests := []struct {
		name                              string
		rsDeleting                        bool
		wantOwned, wantAdopt, wantRelease []string
	}{
		{"live", false, []string{"mine"}, []string{"orphan", "extra-labels"}, []string{"mine-relabelled"}},
		{"being deleted adopts and releases nothing", true, []string{"mine"}, []string{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS(3)
			if tt.rsDeleting {
				deleting := metav1.NewTime(t0)
				rs.DeletionTimestamp = &deleting
			}
			owned, adopt, release, err := Claim(rs, pods)
			if err != nil {
				t.Fatal(err)
			}
			got := [][]string{names(owned), names(adopt), names(release)}
			want := [][]string{tt.wantOwned, tt.wantAdopt, tt.wantRelease}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("owned, adopt, release (-want +got):\n%s", diff)
			}
		})
	}
	rs := newRS(1)
	rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}}
	if _, _, _, err := Claim(rs, pods); err == nil {
		t.Error("an invalid selector claimed pods")
	}
}

func TestDecide(t *testing.T) {
	many := func(n int) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, pod("p"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))))
		}
		return out
	}
	tests := []struct {
		name       string
		replicas   int32
		owned      []*corev1.Pod
		wantCreate int
		wantDelete []string
	}{
		{"nothing to do", 2, []*corev1.Pod{pod("a"), pod("b")}, 0, nil},
		{"create the difference", 5, []*corev1.Pod{pod("a"), pod("b")}, 3, nil},
		{"scale from zero", 3, nil, 3, nil},
		{"creation capped by the burst", 2000, many(10), BurstReplicas, nil},
		{"deletion capped by the burst", 0, many(600), 0, nil},
		{"delete the extra, unassigned first", 1, []*corev1.Pod{pod("a", onNode("n1")), pod("b"), pod("c", onNode("n1"))}, 0, []string{"b", "a"}},
		{"scale to zero", 0, []*corev1.Pod{pod("a", onNode("n1")), pod("b", onNode("n2"))}, 0, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(newRS(tt.replicas), tt.owned, tt.owned)
			if d.Create != tt.wantCreate {
				t.Errorf("Create = %d, want %d", d.Create, tt.wantCreate)
			}
			if tt.name == "deletion capped by the burst" {
				if len(d.Delete) != BurstReplicas {
					t.Errorf("deleted %d, want %d", len(d.Delete), BurstReplicas)
				}
				return
			}
			if diff := cmp.Diff(tt.wantDelete, names(d.Delete), cmpEmpty); diff != "" {
				t.Errorf("Delete (-want +got):\n%s", diff)
			}
		})
	}
	if got := Decide(&appsv1.ReplicaSet{}, nil, nil).Create; got != 1 {
		t.Errorf("unset replicas create %d, want 1 (the API's default)", got)
	}
}

var cmpEmpty = cmp.FilterValues(func(a, b []string) bool { return len(a) == 0 && len(b) == 0 }, cmp.Ignore())

func TestRankForDeletion(t *testing.T) {
	tests := []struct {
		name    string
		pods    []*corev1.Pod
		related []*corev1.Pod
		want    []string
	}{
		{"unassigned before assigned",
			[]*corev1.Pod{pod("assigned", onNode("n1"), readyAt(0)), pod("unassigned", phase(corev1.PodPending))}, nil,
			[]string{"unassigned", "assigned"}},
		{"pending, then unknown, then running",
			[]*corev1.Pod{pod("running", onNode("n")), pod("unknown", onNode("n"), phase(corev1.PodUnknown)), pod("pending", onNode("n"), phase(corev1.PodPending))}, nil,
			[]string{"pending", "unknown", "running"}},
		{"not ready before ready",
			[]*corev1.Pod{pod("ready", onNode("n"), readyAt(0)), pod("not-ready", onNode("n"))}, nil,
			[]string{"not-ready", "ready"}},
		{"more siblings on the node first",
			[]*corev1.Pod{pod("alone", onNode("n1"), readyAt(0)), pod("crowded", onNode("n2"), readyAt(0))},
			[]*corev1.Pod{pod("alone", onNode("n1")), pod("crowded", onNode("n2")), pod("sibling1", onNode("n2")), pod("sibling2", onNode("n2"))},
			[]string{"crowded", "alone"}},
		{"finished siblings do not count",
			[]*corev1.Pod{pod("a", onNode("n1"), readyAt(0)), pod("b", onNode("n2"), readyAt(0), created(time.Second))},
			[]*corev1.Pod{pod("a", onNode("n1")), pod("b", onNode("n2")), pod("dead", onNode("n1"), phase(corev1.PodFailed))},
			[]string{"b", "a"}},
		{"ready for less time first",
			[]*corev1.Pod{pod("long", onNode("n"), readyAt(time.Minute)), pod("short", onNode("n"), readyAt(time.Hour))}, nil,
			[]string{"short", "long"}},
		{"more restarts first",
			[]*corev1.Pod{pod("calm", onNode("n"), readyAt(0)), pod("flappy", onNode("n"), readyAt(0), restarted(4))}, nil,
			[]string{"flappy", "calm"}},
		{"newer first",
			[]*corev1.Pod{pod("old", onNode("n"), readyAt(0)), pod("new", onNode("n"), readyAt(0), created(time.Hour)), pod("mid", onNode("n"), readyAt(0), created(time.Minute))}, nil,
			[]string{"new", "mid", "old"}},
		{"phase outranks readiness and age",
			[]*corev1.Pod{pod("running-not-ready", onNode("n"), created(time.Hour)), pod("pending-old", onNode("n"), phase(corev1.PodPending))}, nil,
			[]string{"pending-old", "running-not-ready"}},
		{"restarts outrank age",
			[]*corev1.Pod{pod("new", onNode("n"), readyAt(0), created(time.Hour)), pod("old-restarted", onNode("n"), readyAt(0), restarted(1))}, nil,
			[]string{"old-restarted", "new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := append([]*corev1.Pod(nil), tt.pods...)
			RankForDeletion(pods, tt.related)
			if diff := cmp.Diff(tt.want, names(pods)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	failure := appsv1.ReplicaSetCondition{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: ReasonFailedCreate, Message: "old", LastTransitionTime: metav1.NewTime(t0)}
	tests := []struct {
		name         string
		minReady     int32
		conds        []appsv1.ReplicaSetCondition
		owned        []*corev1.Pod
		err          error
		failedCreate bool
		want         appsv1.ReplicaSetStatus
		wantNext     time.Duration
	}{
		{"counts", 0, nil,
			[]*corev1.Pod{pod("a", readyAt(0)), pod("b"), pod("c", readyAt(0), labelled(map[string]string{"app": "web"}))}, nil, false,
			appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 3}, 0},
		{"minReadySeconds holds back availability",
			30, nil,
			[]*corev1.Pod{pod("old", readyAt(0)), pod("fresh", readyAt(time.Hour-10*time.Second)), pod("fresher", readyAt(time.Hour-5*time.Second))}, nil, false,
			appsv1.ReplicaSetStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 1, ObservedGeneration: 3}, 20 * time.Second},
		{"creation failure sets ReplicaFailure",
			0, nil, nil, errors.New("exceeded quota"), true,
			appsv1.ReplicaSetStatus{ObservedGeneration: 3, Conditions: []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
				Reason: ReasonFailedCreate, Message: "exceeded quota", LastTransitionTime: metav1.NewTime(now)}}}, 0},
		{"deletion failure",
			0, nil, nil, errors.New("boom"), false,
			appsv1.ReplicaSetStatus{ObservedGeneration: 3, Conditions: []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
				Reason: ReasonFailedDelete, Message: "boom", LastTransitionTime: metav1.NewTime(now)}}}, 0},
		{"an existing failure is kept as it was",
			0, []appsv1.ReplicaSetCondition{failure}, nil, errors.New("new"), true,
			appsv1.ReplicaSetStatus{ObservedGeneration: 3, Conditions: []appsv1.ReplicaSetCondition{failure}}, 0},
		{"success clears it",
			0, []appsv1.ReplicaSetCondition{failure}, nil, nil, false,
			appsv1.ReplicaSetStatus{ObservedGeneration: 3}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS(3)
			rs.Spec.MinReadySeconds = tt.minReady
			rs.Status.Conditions = tt.conds
			got, next := Status(rs, tt.owned, tt.err, tt.failedCreate, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if next != tt.wantNext {
				t.Errorf("next = %s, want %s", next, tt.wantNext)
			}
			rs.Status = got
			if StatusChanged(rs, got) {
				t.Error("StatusChanged of the same status")
			}
		})
	}
}

func TestPodFromTemplate(t *testing.T) {
	rs := newRS(1)
	p := PodFromTemplate(rs, Kind)
	if p.GenerateName != "web-" || p.Namespace != "ns" {
		t.Errorf("generateName %q namespace %q", p.GenerateName, p.Namespace)
	}
	if diff := cmp.Diff(rs.Spec.Template.Labels, p.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || ref.APIVersion != "apps/v1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference %+v", ref)
	}
	p.Labels["changed"] = "yes"
	if _, ok := rs.Spec.Template.Labels["changed"]; ok {
		t.Error("the pod shares its labels map with the template")
	}
}

func TestStatusDue(t *testing.T) {
	now := t0.Add(time.Hour)
	stored := appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: 3}
	with := func(f func(*appsv1.ReplicaSetStatus)) appsv1.ReplicaSetStatus {
		st := stored
		f(&st)
		return st
	}
	recent, old := now.Add(-StatusInterval/2), now.Add(-2*StatusInterval)
	tests := []struct {
		name     string
		st       appsv1.ReplicaSetStatus
		last     time.Time
		wantDue  bool
		wantWait time.Duration
	}{
		{"unchanged", stored, old, false, 0},
		{"counts rising, written recently: wait", with(func(s *appsv1.ReplicaSetStatus) { s.ReadyReplicas = 2 }), recent, false, StatusInterval / 2},
		{"counts rising, written long ago", with(func(s *appsv1.ReplicaSetStatus) { s.ReadyReplicas = 2 }), old, true, 0},
		{"all there: at once", with(func(s *appsv1.ReplicaSetStatus) {
			s.Replicas, s.FullyLabeledReplicas, s.ReadyReplicas, s.AvailableReplicas = 3, 3, 3, 3
		}), recent, true, 0},
		{"a pod less: at once", with(func(s *appsv1.ReplicaSetStatus) { s.AvailableReplicas = 0 }), recent, true, 0},
		{"new generation: at once", with(func(s *appsv1.ReplicaSetStatus) { s.ObservedGeneration = 4 }), recent, true, 0},
		{"condition: at once", with(func(s *appsv1.ReplicaSetStatus) {
			s.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}}
		}), recent, true, 0},
		{"never written", with(func(s *appsv1.ReplicaSetStatus) { s.ReadyReplicas = 2 }), time.Time{}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS(3)
			rs.Status = stored
			due, wait := StatusDue(rs, tt.st, tt.last, now)
			if due != tt.wantDue || wait != tt.wantWait {
				t.Errorf("StatusDue = %v, %s; want %v, %s", due, wait, tt.wantDue, tt.wantWait)
			}
		})
	}
}
