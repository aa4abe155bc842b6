package replicaset

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/informer/informertest"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// harness is a controller over caches that show only what a test applies to them, and fake
// writers that hold what the controller wrote: a cache behind the apiserver.
type harness struct {
	c         *Controller[*appsv1.ReplicaSet]
	rss, pods *informer.Informer
	rsAPI     *fake.Writer[*appsv1.ReplicaSet]
	podAPI    *fake.Writer[*corev1.Pod]
}

// start stores rs and pods in the fake API and in the caches, as they are after a list.
func start(t *testing.T, rs *appsv1.ReplicaSet, pods ...*corev1.Pod) *harness {
	t.Helper()
	h := &harness{rsAPI: fake.New(func() *appsv1.ReplicaSet { return &appsv1.ReplicaSet{} }),
		podAPI: fake.New(func() *corev1.Pod { return &corev1.Pod{} })}
	rs = h.rsAPI.Put(rs)
	var stored []runtime.Object
	for _, p := range pods {
		stored = append(stored, h.podAPI.Put(p))
	}
	h.rss = informer.New(informer.Config{Name: "replicasets", ListerWatcher: informertest.Fixed(rs), NoWatch: true, RelistPeriod: time.Hour})
	h.pods = informer.New(informer.Config{Name: "pods", ListerWatcher: informertest.Fixed(stored...), NoWatch: true, RelistPeriod: time.Hour})
	h.c = New(Config[*appsv1.ReplicaSet]{Name: Name, View: ReplicaSets, OwnerInformer: h.rss, PodInformer: h.pods, Owners: h.rsAPI, Pods: h.podAPI,
		Recorder: record.NewFake(100)})
	go func() { _ = h.rss.Start(t.Context()) }()
	go func() { _ = h.pods.Start(t.Context()) }()
	if !informer.WaitForSync(t.Context(), h.rss.HasSynced, h.pods.HasSynced) {
		t.Fatal("caches did not sync")
	}
	return h
}

// reconcile runs one sync of ns/web, then lets the ReplicaSet cache catch up with the API (the
// pod cache stays behind).
func (h *harness) reconcile(t *testing.T) (reconcile.Result, error) {
	t.Helper()
	res, err := h.c.Reconcile(t.Context(), "ns/web")
	if rs, ok := h.rsAPI.Object("ns", "web"); ok {
		if _, aerr := h.rss.Apply(watch.Modified, rs); aerr != nil {
			t.Fatal(aerr)
		}
	}
	return res, err
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) status(t *testing.T) appsv1.ReplicaSetStatus {
	t.Helper()
	rs, ok := h.rsAPI.Object("ns", "web")
	if !ok {
		t.Fatal("the ReplicaSet is gone from the API")
	}
	return rs.Status
}

// TestSlowCacheCreatesOnce: creations the cache has not shown yet are expected, so syncs in
// between create nothing more; once the pods arrive, the ReplicaSet is satisfied.
func TestSlowCacheCreatesOnce(t *testing.T) {
	h := start(t, newRS(3))
	key := "ns/web"
	for range 3 {
		if _, err := h.reconcile(t); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}
	if n := len(h.podAPI.CallsOf(fake.VerbCreate)); n != 3 {
		t.Fatalf("%d pods created over three syncs with a cache showing none, want 3", n)
	}
	if h.c.expectations.Satisfied(key, time.Now()) {
		t.Fatal("expectations satisfied before the cache showed the pods")
	}
	for _, p := range h.podAPI.Objects() {
		if _, err := h.pods.Apply(watch.Added, p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the creations to be observed", func() bool { return h.c.expectations.Satisfied(key, time.Now()) })
	res, err := h.reconcile(t)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if res.RequeueAfter > 0 {
		// The counts rose right after the first status write: the next is held back a while.
		time.Sleep(res.RequeueAfter)
		if _, err := h.reconcile(t); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
	}
	if n := len(h.podAPI.CallsOf(fake.VerbCreate)); n != 3 {
		t.Errorf("%d pods created once the cache caught up, want still 3", n)
	}
	if st := h.status(t); st.Replicas != 3 {
		t.Errorf("status %+v, want 3 replicas", st)
	}
}

// TestFailedCreationsSlowStart: a creation that fails stops the batch after the first pod,
// sets ReplicaFailure, and leaves nothing expected, so the next sync tries again.
func TestFailedCreationsSlowStart(t *testing.T) {
	h := start(t, newRS(10))
	h.podAPI.FailNext(fake.VerbCreate, errors.New(`pods "web-" is forbidden: exceeded quota`))
	if _, err := h.reconcile(t); err == nil {
		t.Fatal("reconcile succeeded with every creation failing")
	}
	if n := len(h.podAPI.CallsOf(fake.VerbCreate)); n != 1 {
		t.Errorf("%d creations attempted, want 1 (slow start stops after the first batch fails)", n)
	}
	st := h.status(t)
	if len(st.Conditions) != 1 || st.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure ||
		st.Conditions[0].Reason != ReasonFailedCreate || st.Conditions[0].Message == "" {
		t.Errorf("status %+v, want a ReplicaFailure condition FailedCreate with the error", st)
	}
	if !h.c.expectations.Satisfied("ns/web", time.Now()) {
		t.Error("failed creations are still expected: the ReplicaSet would wait 5 minutes")
	}
}

// TestAdoptAndRelease: a matching orphan gets rs as controller and a pod rs controls whose
// labels stopped matching loses it, each in a patch guarded by the pod's uid and
// resourceVersion; an adopted pod counts, so nothing is created for it.
func TestAdoptAndRelease(t *testing.T) {
	rs := newRS(1)
	orphan := pod("orphan")
	strayed := pod("strayed", ownedBy(rs.UID), func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} })
	h := start(t, rs, orphan, strayed)
	if _, err := h.reconcile(t); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if n := len(h.podAPI.CallsOf(fake.VerbCreate)); n != 0 {
		t.Errorf("%d pods created, want none: the adopted orphan is the one replica", n)
	}
	adopted, _ := h.podAPI.Object("ns", "orphan")
	if ref := metav1.GetControllerOfNoCopy(adopted); ref == nil || ref.UID != rs.UID || ref.Kind != Kind.Kind {
		t.Errorf("orphan's owners %+v, want rs as controller", adopted.OwnerReferences)
	}
	released, _ := h.podAPI.Object("ns", "strayed")
	if len(released.OwnerReferences) != 0 {
		t.Errorf("strayed pod's owners %+v, want none", released.OwnerReferences)
	}
	patches := h.podAPI.CallsOf(fake.VerbPatch)
	if len(patches) != 2 {
		t.Errorf("%d patches of pods, want 2 (adopt, release)", len(patches))
	}
	for _, call := range patches {
		// The fake refuses a patch whose uid or resourceVersion is not the stored one: a patch
		// that went through carried the pod's own.
		if call.Object == nil {
			t.Errorf("patch of %s refused: %s", call.Name, call.Patch)
		}
	}
	if st := h.status(t); st.Replicas != 1 {
		t.Errorf("status %+v, want 1 replica", st)
	}
}
