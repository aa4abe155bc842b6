package replication

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/informer/informertest"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/testwait"
)

// recorder keeps what each event was about.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, _ := obj.(metav1.Object)
	r.events = append(r.events, fmt.Sprintf("%T %s %s", obj, m.GetName(), reason))
}

func (r *recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// harness is the controller over caches that show only what a test applies to them, and fake
// writers that hold what it wrote.
type harness struct {
	c        *replicaset.Controller[*corev1.ReplicationController]
	rcs      *informer.Informer
	pods     *informer.Informer
	rcAPI    *fake.Writer[*corev1.ReplicationController]
	podAPI   *fake.Writer[*corev1.Pod]
	recorder *recorder
}

func start(t *testing.T, rc *corev1.ReplicationController, pods ...*corev1.Pod) *harness {
	t.Helper()
	h := &harness{rcAPI: fake.New(func() *corev1.ReplicationController { return &corev1.ReplicationController{} }),
		podAPI: fake.New(func() *corev1.Pod { return &corev1.Pod{} }), recorder: &recorder{}}
	rc = h.rcAPI.Put(rc)
	var stored []runtime.Object
	for _, p := range pods {
		stored = append(stored, h.podAPI.Put(p))
	}
	h.rcs = informer.New(informer.Config{Name: "replicationcontrollers", ListerWatcher: informertest.Fixed(rc), NoWatch: true, RelistPeriod: time.Hour})
	h.pods = informer.New(informer.Config{Name: "pods", ListerWatcher: informertest.Fixed(stored...), NoWatch: true, RelistPeriod: time.Hour})
	h.c = New(replicaset.Config[*corev1.ReplicationController]{OwnerInformer: h.rcs, PodInformer: h.pods,
		Owners: h.rcAPI, Pods: h.podAPI, Recorder: h.recorder})
	go func() { _ = h.rcs.Start(t.Context()) }()
	go func() { _ = h.pods.Start(t.Context()) }()
	if !informer.WaitForSync(t.Context(), h.rcs.HasSynced, h.pods.HasSynced) {
		t.Fatal("caches did not sync")
	}
	return h
}

// sync runs one reconcile of ns/web, then shows the caches what the API holds.
func (h *harness) sync(t *testing.T) reconcile.Result {
	t.Helper()
	res, err := h.c.Reconcile(t.Context(), "ns/web")
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if rc, ok := h.rcAPI.Object("ns", "web"); ok {
		if _, err := h.rcs.Apply(watch.Modified, rc); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range h.podAPI.Objects() {
		if _, err := h.pods.Apply(watch.Modified, p); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func (h *harness) status(t *testing.T) corev1.ReplicationControllerStatus {
	t.Helper()
	rc, ok := h.rcAPI.Object("ns", "web")
	if !ok {
		t.Fatal("the ReplicationController is gone from the API")
	}
	return rc.Status
}

func ready(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
}

func orphan(name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
		Labels: map[string]string{"app": "web"}}}
	ready(p)
	return p
}

// A ReplicationController gets its replicas as pods it controls, with events about it, and
// a status that counts them as they become ready.
func TestCreatesPodsAndReportsStatus(t *testing.T) {
	h := start(t, newRC(2))
	h.sync(t)
	created := h.podAPI.Objects()
	if len(created) != 2 {
		t.Fatalf("%d pods created, want 2", len(created))
	}
	for _, p := range created {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.Kind != "ReplicationController" || ref.UID != "rc-uid" {
			t.Errorf("pod %s controller %+v", p.Name, ref)
		}
		if p.Labels["tier"] != "front" {
			t.Errorf("pod %s labels %v, want the template's", p.Name, p.Labels)
		}
	}
	for _, e := range h.recorder.all() {
		if e != "*v1.ReplicationController web SuccessfulCreate" {
			t.Errorf("event %q, want SuccessfulCreate about the ReplicationController", e)
		}
	}
	if n := len(h.recorder.all()); n != 2 {
		t.Errorf("%d events, want 2", n)
	}

	// The pods run, one ready; the status says so (labels fully the template's: fullyLabeled).
	for i, p := range created {
		p = p.DeepCopy()
		p.Status.Phase = corev1.PodRunning
		if i == 0 {
			ready(p)
		}
		h.podAPI.Put(p)
	}
	testwait.For(t, "a status with the pods", func() bool {
		res := h.sync(t)
		st := h.status(t)
		if st.Replicas != 2 || st.ReadyReplicas != 1 {
			if res.RequeueAfter > 0 {
				time.Sleep(res.RequeueAfter)
			}
			return false
		}
		return true
	})
	st := h.status(t)
	if st.FullyLabeledReplicas != 2 || st.AvailableReplicas != 1 || st.ObservedGeneration != 2 {
		t.Errorf("status %+v", st)
	}
}

// Orphans matching the selector are adopted, and the extra one is deleted: the
// ReplicationController keeps exactly spec.replicas.
func TestAdoptsAndScalesDown(t *testing.T) {
	h := start(t, newRC(1), orphan("a"), orphan("b"))
	h.sync(t)
	for _, name := range []string{"a", "b"} {
		p, ok := h.podAPI.Object("ns", name)
		if !ok {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.Kind != "ReplicationController" || ref.UID != "rc-uid" {
			t.Errorf("pod %s controller %+v, want the ReplicationController", name, ref)
		}
	}
	if n := len(h.podAPI.CallsOf(fake.VerbCreate)); n != 0 {
		t.Errorf("%d pods created beside two orphans, want none", n)
	}
	if n := len(h.podAPI.CallsOf(fake.VerbDelete)); n != 1 {
		t.Errorf("%d pods deleted, want 1 (two adopted for one replica)", n)
	}
}
