package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

func TestGCFinalizers(t *testing.T) {
	orphan, fg := metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents
	policy := func(p metav1.DeletionPropagation) *metav1.DeleteOptions {
		return &metav1.DeleteOptions{PropagationPolicy: &p}
	}
	orphanDeps := func(b bool) *metav1.DeleteOptions { return &metav1.DeleteOptions{OrphanDependents: &b} }
	cases := []struct {
		name       string
		policy     GCPolicy
		finalizers []string
		opts       *metav1.DeleteOptions
		want       []string
		changed    bool
	}{
		{"default background, nothing to add", DeleteDependents, nil, nil, nil, false},
		{"default background keeps others", DeleteDependents, []string{"x/y"}, &metav1.DeleteOptions{}, []string{"x/y"}, false},
		{"default orphan (batch/v1 Job)", OrphanDependents, nil, nil, []string{orphan}, true},
		{"explicit background beats the orphan default", OrphanDependents, nil, policy(metav1.DeletePropagationBackground), nil, false},
		{"orphan", DeleteDependents, []string{"x/y"}, policy(metav1.DeletePropagationOrphan), []string{"x/y", orphan}, true},
		{"foreground", DeleteDependents, nil, policy(metav1.DeletePropagationForeground), []string{fg}, true},
		{"foreground replaces orphan", DeleteDependents, []string{orphan}, policy(metav1.DeletePropagationForeground), []string{fg}, true},
		{"background removes orphan", DeleteDependents, []string{orphan, "x/y"}, policy(metav1.DeletePropagationBackground), []string{"x/y"}, true},
		{"a second delete without options keeps foreground", DeleteDependents, []string{fg}, nil, []string{fg}, false},
		{"a second delete without options keeps orphan", DeleteDependents, []string{orphan}, &metav1.DeleteOptions{}, []string{orphan}, false},
		{"orphanDependents=true", DeleteDependents, nil, orphanDeps(true), []string{orphan}, true},
		{"orphanDependents=false beats the default", OrphanDependents, nil, orphanDeps(false), nil, false},
		{"orphanDependents=false removes foreground too", DeleteDependents, []string{fg}, orphanDeps(false), []string{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changed, got := gcFinalizers(tc.policy, tc.finalizers, tc.opts)
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("finalizers (-want +got):\n%s", diff)
			}
		})
	}
}

func deleteWith(t *testing.T, r *Registry, k Key, p metav1.DeletionPropagation) runtime.Object {
	t.Helper()
	out, err := r.Delete(t.Context(), k, &metav1.DeleteOptions{PropagationPolicy: &p})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Orphan and Foreground deletes keep the object with deletionTimestamp and their finalizer
// until an update removes it; Background (the default) deletes at once; a batch/v1 Job
// orphans by default.
func TestDeletePropagation(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	cm := resource(t, "configmaps")
	for _, p := range []metav1.DeletionPropagation{metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground} {
		t.Run(string(p), func(t *testing.T) {
			mustCreate(t, r, cm, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner-" + strings.ToLower(string(p))}})
			k := Key{Resource: cm, Namespace: "default", Name: "owner-" + strings.ToLower(string(p))}
			out := deleteWith(t, r, k, p)
			m, _ := metaOf(out)
			want := map[metav1.DeletionPropagation]string{metav1.DeletePropagationOrphan: metav1.FinalizerOrphanDependents, metav1.DeletePropagationForeground: metav1.FinalizerDeleteDependents}[p]
			if m.GetDeletionTimestamp() == nil || m.GetDeletionGracePeriodSeconds() == nil || *m.GetDeletionGracePeriodSeconds() != 0 {
				t.Fatalf("deletionTimestamp %v grace %v, want set and 0", m.GetDeletionTimestamp(), m.GetDeletionGracePeriodSeconds())
			}
			if diff := cmp.Diff([]string{want}, m.GetFinalizers()); diff != "" {
				t.Fatalf("finalizers (-want +got):\n%s", diff)
			}
			// An update that keeps the finalizer keeps the object.
			if _, err := r.Update(ctx, k, UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
				cur.(*corev1.ConfigMap).Labels = map[string]string{"touched": "yes"}
				return cur, "", nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get(ctx, k); err != nil {
				t.Fatalf("gone while its finalizer is there: %v", err)
			}
			if _, err := r.Update(ctx, k, UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
				cur.(*corev1.ConfigMap).Finalizers = nil
				return cur, "", nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Get(ctx, k); !errors.Is(err, apierror.ErrNotFound) {
				t.Fatalf("still there without finalizers: %v", err)
			}
		})
	}
	t.Run("Background", func(t *testing.T) {
		mustCreate(t, r, cm, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bg"}})
		k := Key{Resource: cm, Namespace: "default", Name: "bg"}
		deleteWith(t, r, k, metav1.DeletePropagationBackground)
		if _, err := r.Get(ctx, k); !errors.Is(err, apierror.ErrNotFound) {
			t.Fatalf("background delete left the object: %v", err)
		}
	})
	t.Run("a second delete switches foreground to orphan", func(t *testing.T) {
		mustCreate(t, r, cm, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "switch", Finalizers: []string{"example.com/keep"}}})
		k := Key{Resource: cm, Namespace: "default", Name: "switch"}
		deleteWith(t, r, k, metav1.DeletePropagationForeground)
		m, _ := metaOf(deleteWith(t, r, k, metav1.DeletePropagationOrphan))
		if diff := cmp.Diff([]string{"example.com/keep", metav1.FinalizerOrphanDependents}, m.GetFinalizers()); diff != "" {
			t.Fatalf("finalizers (-want +got):\n%s", diff)
		}
	})
	t.Run("batch/v1 Job orphans by default", func(t *testing.T) {
		jobs := resource(t, "jobs")
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		mustCreate(t, r, jobs, "default", job)
		out, err := r.Delete(ctx, Key{Resource: jobs, Namespace: "default", Name: "pi"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*batchv1.Job).Finalizers; !cmp.Equal(got, []string{metav1.FinalizerOrphanDependents}) {
			t.Fatalf("finalizers %v, want [orphan]", got)
		}
	})
}

// A pod in its grace period stays through updates (its kubelet reports status while it
// stops it) and goes with the kubelet's final delete.
func TestGracefulPodSurvivesUpdates(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	pods := resource(t, "pods")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	mustCreate(t, r, pods, "default", pod)
	k := Key{Resource: pods, Namespace: "default", Name: "p"}
	out, err := r.Delete(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := out.(*corev1.Pod).DeletionGracePeriodSeconds; g == nil || *g != corev1.DefaultTerminationGracePeriodSeconds {
		t.Fatalf("grace %v, want %d", g, corev1.DefaultTerminationGracePeriodSeconds)
	}
	if _, err := r.Update(ctx, k, UpdateOptions{Subresource: "status"}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
		cur.(*corev1.Pod).Status.Phase = corev1.PodRunning
		return cur, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, k); err != nil {
		t.Fatalf("pod in its grace period deleted by a status update: %v", err)
	}
	zero := int64(0)
	if _, err := r.Delete(ctx, k, &metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, k); !errors.Is(err, apierror.ErrNotFound) {
		t.Fatalf("pod still there after the delete with grace 0: %v", err)
	}
}

// A terminating namespace deletes its content in the background: a Job in it, whose own
// default is to orphan, does not wait for a garbage collector.
func TestNamespaceDeletesJobsInTheBackground(t *testing.T) {
	r := newTestRegistry(t)
	ctx := t.Context()
	nsRes, jobs := resource(t, "namespaces"), resource(t, "jobs")
	mustCreate(t, r, nsRes, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "batch"}})
	mustCreate(t, r, jobs, "batch", &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}})
	if _, err := r.Delete(ctx, Key{Resource: nsRes, Name: "batch"}, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r.ns.pass(ctx)
	}
	if _, err := r.Get(ctx, Key{Resource: jobs, Namespace: "batch", Name: "pi"}); !errors.Is(err, apierror.ErrNotFound) {
		t.Fatalf("job in a deleted namespace: %v", err)
	}
	if _, err := r.Get(ctx, Key{Resource: nsRes, Name: "batch"}); !errors.Is(err, apierror.ErrNotFound) {
		t.Fatalf("namespace still there: %v", err)
	}
}
