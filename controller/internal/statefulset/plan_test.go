package statefulset

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/history"
)

func testSet(replicas int32, policy appsv1.PodManagementPolicyType, partition *int32) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: &replicas, PodManagementPolicy: policy, ServiceName: "nginx",
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: partition}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}},
		},
	}
	return s
}

type podState int

const (
	ready podState = iota
	pending
	terminating
	failedPod
)

func pod(ordinal int, rev string, st podState) *corev1.Pod {
	name := PodName(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, ordinal)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid",
		Labels: map[string]string{history.HashLabel: rev, PodNameLabel: name, PodIndexLabel: strconv.Itoa(ordinal)}}}
	switch st {
	case ready, terminating:
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if st == terminating {
			p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
		}
	case pending:
		p.Status.Phase = corev1.PodPending
	case failedPod:
		p.Status.Phase = corev1.PodFailed
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func unlabelled(p *corev1.Pod, label string) *corev1.Pod {
	delete(p.Labels, label)
	return p
}

// decideNow is the time TestDecide decides at.
var decideNow = time.Unix(1000, 0)

// readySince makes a ready pod's Ready condition d old at decideNow.
func readySince(p *corev1.Pod, d time.Duration) *corev1.Pod {
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(decideNow.Add(-d))
	return p
}

func minReady(s *appsv1.StatefulSet, seconds int32) *appsv1.StatefulSet {
	s.Spec.MinReadySeconds = seconds
	return s
}

type planView struct {
	Fix     []string
	Create  []int
	Delete  []string
	Waiting string
}

func TestDecide(t *testing.T) {
	ordered, parallel := appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement
	cases := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []*corev1.Pod
		want planView
	}{
		{"ordered: the first pod first", testSet(3, ordered, ptr(int32(0))), nil,
			planView{Create: []int{0}, Waiting: "web-0"}},
		{"ordered: the next waits for the previous to be ready", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", pending)}, planView{Waiting: "web-0"}},
		{"ordered: the next once the previous is ready", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready)}, planView{Create: []int{1}, Waiting: "web-1"}},
		{"ordered: a deleted middle pod comes back first", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(2, "r1", ready)}, planView{Create: []int{1}, Waiting: "web-1"}},
		{"ordered: a terminating pod is waited for", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", terminating), pod(2, "r1", ready)}, planView{Waiting: "web-1"}},
		{"parallel: every missing pod at once", testSet(3, parallel, ptr(int32(0))),
			[]*corev1.Pod{pod(1, "r1", pending)}, planView{Create: []int{0, 2}}},
		{"ordered: scale down removes the highest first, one at a time", testSet(1, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r1", ready)}, planView{Delete: []string{"web-2"}, Waiting: "web-2"}},
		{"ordered: scale down waits for the condemned pod to go", testSet(1, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r1", terminating)}, planView{Waiting: "web-2"}},
		{"ordered: scale down waits for unhealthy replicas", testSet(1, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", pending), pod(1, "r1", ready)}, planView{Waiting: "web-0"}},
		{"parallel: scale down removes them all", testSet(1, parallel, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r1", pending)}, planView{Delete: []string{"web-2", "web-1"}}},
		{"a failed pod is deleted to be made again", testSet(2, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", failedPod), pod(1, "r1", ready)}, planView{Delete: []string{"web-0"}, Waiting: "web-0"}},
		{"rolling update: the highest pod first", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r1", ready)}, planView{Delete: []string{"web-2"}, Waiting: "web-2"}},
		{"rolling update: the next once the updated one is ready", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r2", ready)}, planView{Delete: []string{"web-1"}, Waiting: "web-1"}},
		{"rolling update: waits for the updated pod", testSet(3, parallel, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r2", pending)}, planView{Waiting: "web-2"}},
		{"rolling update: nothing below the partition", testSet(3, ordered, ptr(int32(2))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r2", ready)}, planView{}},
		{"rolling update: partition above replicas updates none", testSet(3, ordered, ptr(int32(5))),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), pod(2, "r1", ready)}, planView{}},
		{"on delete: no pod is replaced", func() *appsv1.StatefulSet {
			s := testSet(2, ordered, nil)
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
			return s
		}(), []*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready)}, planView{}},
		{"a pod that lost its identity labels gets them back before the rollout", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{pod(0, "r1", ready), unlabelled(pod(1, "r1", ready), PodNameLabel), unlabelled(pod(2, "r1", ready), PodIndexLabel)},
			planView{Fix: []string{"web-1", "web-2"}}},
		{"ordered: identities are fixed up to the pod waited for", testSet(3, ordered, ptr(int32(0))),
			[]*corev1.Pod{unlabelled(pod(0, "r2", pending), PodNameLabel), unlabelled(pod(1, "r2", ready), PodNameLabel)},
			planView{Fix: []string{"web-0"}, Waiting: "web-0"}},
		{"ordered: the next waits for the previous to be ready for minReadySeconds", minReady(testSet(3, ordered, ptr(int32(0))), 10),
			[]*corev1.Pod{readySince(pod(0, "r1", ready), 5*time.Second)}, planView{Waiting: "web-0"}},
		{"ordered: the next once the previous is available", minReady(testSet(3, ordered, ptr(int32(0))), 10),
			[]*corev1.Pod{readySince(pod(0, "r1", ready), 10*time.Second)}, planView{Create: []int{1}, Waiting: "web-1"}},
		{"rolling update: waits for the updated pod to be available", minReady(testSet(3, ordered, ptr(int32(0))), 10),
			[]*corev1.Pod{pod(0, "r1", ready), pod(1, "r1", ready), readySince(pod(2, "r2", ready), time.Second)}, planView{Waiting: "web-2"}},
		{"ordinals start at spec.ordinals.start", func() *appsv1.StatefulSet {
			s := testSet(2, ordered, ptr(int32(0)))
			s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
			return s
		}(), []*corev1.Pod{pod(5, "r2", ready)}, planView{Create: []int{6}, Waiting: "web-6"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.set, tc.pods, "r2", decideNow)
			got := planView{Create: p.Create, Waiting: p.Waiting}
			for _, d := range p.Delete {
				got.Delete = append(got.Delete, d.Name)
			}
			for _, f := range p.Fix {
				got.Fix = append(got.Fix, f.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRevisionFor(t *testing.T) {
	set := testSet(4, appsv1.OrderedReadyPodManagement, ptr(int32(2)))
	var got []string
	for o := range 4 {
		got = append(got, RevisionFor(set, o, "cur", "upd"))
	}
	if diff := cmp.Diff([]string{"cur", "cur", "upd", "upd"}, got); diff != "" {
		t.Errorf("revisions by ordinal (-want +got):\n%s", diff)
	}
	set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	if r := RevisionFor(set, 0, "cur", "upd"); r != "upd" {
		t.Errorf("OnDelete makes a replaced pod from %q, want the update revision", r)
	}
}

func TestNewPodAndClaims(t *testing.T) {
	set := testSet(3, appsv1.OrderedReadyPodManagement, nil)
	set.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	p := NewPod(set, &set.Spec.Template, 1, "web-abc")
	if p.Name != "web-1" || p.Spec.Hostname != "web-1" || p.Spec.Subdomain != "nginx" {
		t.Errorf("name %q hostname %q subdomain %q, want web-1 web-1 nginx", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	wantLabels := map[string]string{"app": "web", PodNameLabel: "web-1", PodIndexLabel: "1", history.HashLabel: "web-abc"}
	if diff := cmp.Diff(wantLabels, p.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-1" {
		t.Errorf("volumes %+v, want data replaced by claim data-web-1", p.Spec.Volumes)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != set.UID || ref.Kind != "StatefulSet" {
		t.Errorf("controller %+v, want the StatefulSet", ref)
	}
	claims := NewClaims(set, 2)
	if len(claims) != 1 || claims[0].Name != "data-web-2" || claims[0].Labels["app"] != "web" {
		t.Errorf("claims %+v, want data-web-2 labelled app=web", claims)
	}
	if set.Spec.Template.Spec.Volumes[0].EmptyDir == nil {
		t.Error("NewPod changed the template's volumes")
	}
}

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"web-0": 0, "web-12": 12, "web-": -1, "web-01": -1, "web-x": -1, "webx-1": -1, "other-1": -1, "web-1-2": -1} {
		if got := Ordinal("web", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}); got != want {
			t.Errorf("Ordinal(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestClaimOwners(t *testing.T) {
	retain, del := appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	podOwner := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", UID: "pod-uid"}}
	other := metav1.OwnerReference{Kind: "Other", Name: "o", UID: "other"}
	cases := []struct {
		name             string
		whenDeleted, scl appsv1.PersistentVolumeClaimRetentionPolicyType
		ordinal          int
		have             []metav1.OwnerReference
		want             []string // owner uids
	}{
		{"retain retain: no owners", retain, retain, 0, nil, nil},
		{"retain retain: references dropped, others kept", retain, retain, 0, []metav1.OwnerReference{{UID: "set-uid"}, other}, []string{"other"}},
		{"whenDeleted delete: the set owns a replica's claim", del, retain, 0, nil, []string{"set-uid"}},
		{"whenDeleted delete: the set keeps a condemned claim", del, retain, 2, nil, []string{"set-uid"}},
		{"whenScaled delete: a replica's claim has no owner", retain, del, 0, nil, nil},
		{"whenScaled delete: the condemned pod owns its claim", retain, del, 2, nil, []string{"pod-uid"}},
		{"delete delete: condemned goes to the pod", del, del, 2, []metav1.OwnerReference{{UID: "set-uid"}}, []string{"pod-uid"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := testSet(2, appsv1.OrderedReadyPodManagement, nil)
			set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: tc.whenDeleted, WhenScaled: tc.scl}
			claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.have}}
			var got []string
			for _, r := range ClaimOwners(set, claim, podOwner, tc.ordinal) {
				got = append(got, string(r.UID))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	set := testSet(3, appsv1.OrderedReadyPodManagement, ptr(int32(0)))
	set.Generation = 4
	pods := []*corev1.Pod{pod(0, "r1", ready), pod(1, "r2", ready), pod(2, "r2", pending)}
	st, _ := Status(set, pods, "r1", "r2", 0, time.Unix(100, 0))
	want := appsv1.StatefulSetStatus{ObservedGeneration: 4, Replicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, CurrentReplicas: 1, UpdatedReplicas: 2,
		CurrentRevision: "r1", UpdateRevision: "r2", CollisionCount: ptr(int32(0))}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status mid-rollout (-want +got):\n%s", diff)
	}
	pods[0], pods[2] = pod(0, "r2", ready), pod(2, "r2", ready)
	st, _ = Status(set, pods, "r1", "r2", 0, time.Unix(100, 0))
	if st.CurrentRevision != "r2" || st.CurrentReplicas != 3 {
		t.Errorf("after the rollout current %q/%d, want r2/3", st.CurrentRevision, st.CurrentReplicas)
	}
}
