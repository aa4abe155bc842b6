package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/record"
)

func listOf(objs ...runtime.Object) informer.ListerWatcher {
	return informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for _, o := range objs {
				list.Items = append(list.Items, runtime.RawExtension{Object: o.DeepCopyObject()})
			}
			return list, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("no watch in this test")
		},
	}
}

// fakeAPI records the controller's writes; nothing reaches the caches unless a test puts it
// there, which is how a cache behind the apiserver looks.
type fakeAPI struct {
	mu        sync.Mutex
	creates   int
	createErr error
	status    *appsv1.ReplicaSetStatus
	rs        *appsv1.ReplicaSet
	made      []*corev1.Pod
}

func (f *fakeAPI) CreatePod(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	if f.createErr != nil {
		return nil, f.createErr
	}
	out := p.DeepCopy()
	out.Name = fmt.Sprintf("%s%d", p.GenerateName, f.creates)
	out.UID = types.UID(out.Name)
	out.ResourceVersion = fmt.Sprint(100 + f.creates)
	f.made = append(f.made, out)
	return out, nil
}
func (f *fakeAPI) DeletePod(context.Context, string, string, types.UID) error { return nil }
func (f *fakeAPI) SetPodOwners(context.Context, *corev1.Pod, []metav1.OwnerReference) error {
	return nil
}
func (f *fakeAPI) GetReplicaSet(context.Context, string, string) (*appsv1.ReplicaSet, error) {
	return f.rs, nil
}
func (f *fakeAPI) UpdateStatus(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := rs.Status
	f.status = &st
	return rs, nil // same resourceVersion: the cache counts as up to date
}

func (f *fakeAPI) counts() (int, *appsv1.ReplicaSetStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.status
}

func startController(t *testing.T, rs *appsv1.ReplicaSet, api *fakeAPI) (*Controller, *informer.Informer) {
	t.Helper()
	rss := informer.New(informer.Config{Name: "replicasets", ListerWatcher: listOf(rs), NoWatch: true, RelistPeriod: time.Hour})
	pods := informer.New(informer.Config{Name: "pods", ListerWatcher: listOf(), NoWatch: true, RelistPeriod: time.Hour})
	c := New(Config{ReplicaSets: rss, Pods: pods, API: api, Recorder: record.NewFake(100)})
	go func() { _ = rss.Start(t.Context()) }()
	go func() { _ = pods.Start(t.Context()) }()
	if !informer.WaitForSync(t.Context(), rss.HasSynced, pods.HasSynced) {
		t.Fatal("caches did not sync")
	}
	return c, pods
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

// TestSlowCacheCreatesOnce: creations the cache has not shown yet are expected, so syncs in
// between create nothing more; once the pods arrive, the ReplicaSet is satisfied.
func TestSlowCacheCreatesOnce(t *testing.T) {
	rs := newRS(3)
	rs.ResourceVersion = "10"
	api := &fakeAPI{rs: rs}
	c, pods := startController(t, rs, api)
	key := "ns/web"
	for range 3 {
		if err := c.sync(t.Context(), key); err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	if n, _ := api.counts(); n != 3 {
		t.Fatalf("%d pods created over three syncs with a cache showing none, want 3", n)
	}
	if c.expectations.Satisfied(key, time.Now()) {
		t.Fatal("expectations satisfied before the cache showed the pods")
	}
	for _, p := range api.made {
		if _, err := pods.Apply(watch.Added, p); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the creations to be observed", func() bool { return c.expectations.Satisfied(key, time.Now()) })
	if err := c.sync(t.Context(), key); err != nil {
		t.Fatalf("sync: %v", err)
	}
	n, st := api.counts()
	if n != 3 {
		t.Errorf("%d pods created once the cache caught up, want still 3", n)
	}
	if st == nil || st.Replicas != 3 {
		t.Errorf("status %+v, want 3 replicas", st)
	}
}

// TestFailedCreationsSlowStart: a creation that fails stops the batch after the first pod,
// sets ReplicaFailure, and leaves nothing expected, so the next sync tries again.
func TestFailedCreationsSlowStart(t *testing.T) {
	rs := newRS(10)
	rs.ResourceVersion = "10"
	api := &fakeAPI{rs: rs, createErr: errors.New(`pods "web-" is forbidden: exceeded quota`)}
	c, _ := startController(t, rs, api)
	err := c.sync(t.Context(), "ns/web")
	if err == nil {
		t.Fatal("sync succeeded with every creation failing")
	}
	n, st := api.counts()
	if n != 1 {
		t.Errorf("%d creations attempted, want 1 (slow start stops after the first batch fails)", n)
	}
	if st == nil || len(st.Conditions) != 1 || st.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure ||
		st.Conditions[0].Reason != ReasonFailedCreate || st.Conditions[0].Message == "" {
		t.Errorf("status %+v, want a ReplicaFailure condition FailedCreate with the error", st)
	}
	if !c.expectations.Satisfied("ns/web", time.Now()) {
		t.Error("failed creations are still expected: the ReplicaSet would wait 5 minutes")
	}
}
