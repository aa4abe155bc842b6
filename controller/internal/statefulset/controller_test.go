package statefulset

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/controller/internal/history"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/informer/informertest"
	"minik8s.io/shared/record"
)

// harness is a controller over caches that show only what the test lists at the start (a
// cache behind the apiserver), and fake writers holding what the controller wrote.
type harness struct {
	c         *Controller
	setAPI    *fake.Writer[*appsv1.StatefulSet]
	podAPI    *fake.Writer[*corev1.Pod]
	revAPI    *fake.Writer[*appsv1.ControllerRevision]
	claimAPI  *fake.Writer[*corev1.PersistentVolumeClaim]
	setsCache *informer.Informer
}

func start(t *testing.T, set *appsv1.StatefulSet, revs ...*appsv1.ControllerRevision) *harness {
	t.Helper()
	h := &harness{
		setAPI:   fake.New(func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} }),
		podAPI:   fake.New(func() *corev1.Pod { return &corev1.Pod{} }),
		revAPI:   fake.New(func() *appsv1.ControllerRevision { return &appsv1.ControllerRevision{} }),
		claimAPI: fake.New(func() *corev1.PersistentVolumeClaim { return &corev1.PersistentVolumeClaim{} }),
	}
	set = h.setAPI.Put(set)
	for _, r := range revs {
		h.revAPI.Put(r)
	}
	inf := func(name string, objs ...runtime.Object) *informer.Informer {
		i := informer.New(informer.Config{Name: name, ListerWatcher: informertest.Fixed(objs...), NoWatch: true, RelistPeriod: time.Hour})
		go func() { _ = i.Start(t.Context()) }()
		return i
	}
	h.setsCache = inf("statefulsets", set)
	pods, revisions, claims := inf("pods"), inf("controllerrevisions"), inf("persistentvolumeclaims")
	if !informer.WaitForSync(t.Context(), h.setsCache.HasSynced, pods.HasSynced, revisions.HasSynced, claims.HasSynced) {
		t.Fatal("caches did not sync")
	}
	h.c = New(Config{SetInformer: h.setsCache, PodInformer: pods, RevisionInformer: revisions, ClaimInformer: claims,
		Sets: h.setAPI, Pods: h.podAPI, Revisions: h.revAPI, Claims: h.claimAPI, Recorder: record.NewFake(100)})
	return h
}

// sync reconciles ns/web once and lets the set's cache catch up with its status.
func (h *harness) sync(t *testing.T) {
	t.Helper()
	if _, err := h.c.Reconcile(t.Context(), "ns/web"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if s, ok := h.setAPI.Object("ns", "web"); ok {
		if _, err := h.setsCache.Apply(watch.Modified, s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFirstSyncMakesRevisionClaimThenPod(t *testing.T) {
	h := start(t, testSet(3, appsv1.OrderedReadyPodManagement, ptr(int32(0))))
	h.sync(t)
	revs := h.revAPI.Objects()
	if len(revs) != 1 || revs[0].Revision != 1 {
		t.Fatalf("revisions %v, want one, number 1", revs)
	}
	var order []string
	for _, c := range h.claimAPI.CallsOf("create") {
		order = append(order, "claim "+c.Object.(*corev1.PersistentVolumeClaim).Name)
	}
	for _, c := range h.podAPI.CallsOf("create") {
		order = append(order, "pod "+c.Object.(*corev1.Pod).Name)
	}
	if len(order) != 2 || order[0] != "claim data-web-0" || order[1] != "pod web-0" {
		t.Errorf("made %v, want claim data-web-0 and pod web-0 only", order)
	}
	if p, ok := h.podAPI.Object("ns", "web-0"); !ok || p.Labels[history.HashLabel] != revs[0].Name {
		t.Errorf("web-0 %v, want it labelled with revision %s", p, revs[0].Name)
	}
	s, _ := h.setAPI.Object("ns", "web")
	if s.Status.CurrentRevision != revs[0].Name || s.Status.UpdateRevision != revs[0].Name || s.Status.CollisionCount == nil || *s.Status.CollisionCount != 0 {
		t.Errorf("status %+v, want current = update = %s, collisionCount 0", s.Status, revs[0].Name)
	}

	// The caches still show no pod, claim or revision: the next sync asks again and is told
	// they exist, making nothing twice.
	h.sync(t)
	if n := len(h.revAPI.Objects()); n != 1 {
		t.Errorf("%d revisions after a sync on stale caches, want 1", n)
	}
	if n := len(h.podAPI.Objects()); n != 1 {
		t.Errorf("%d pods after a sync on stale caches, want 1", n)
	}
}

func TestRevisionNameCollision(t *testing.T) {
	set := testSet(1, appsv1.OrderedReadyPodManagement, ptr(int32(0)))
	data, err := history.TemplatePatch(set)
	if err != nil {
		t.Fatal(err)
	}
	taken := history.New(set, Kind, set.Spec.Template.Labels, data, 1, ptr(int32(0)))
	taken.Data.Raw = []byte(`{"spec":{"template":{"metadata":{"labels":{"app":"other"}}}}}`)
	taken.OwnerReferences = nil // someone else's
	h := start(t, set, taken)
	h.sync(t)
	s, _ := h.setAPI.Object("ns", "web")
	if s.Status.CollisionCount == nil || *s.Status.CollisionCount != 1 || s.Status.UpdateRevision == taken.Name {
		t.Errorf("status %+v, want collisionCount 1 and a revision named other than %s", s.Status, taken.Name)
	}
	if _, ok := h.revAPI.Object("ns", s.Status.UpdateRevision); !ok {
		t.Errorf("revision %s not made", s.Status.UpdateRevision)
	}
}
