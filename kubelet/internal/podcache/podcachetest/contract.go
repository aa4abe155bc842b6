package podcachetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/kubelet/internal/podcache"
)

// Run checks the podcache.Cache contract. newCache returns an empty cache that no other test
// shares; it is called once per subtest.
func Run(t *testing.T, newCache func(t *testing.T) podcache.Cache) {
	t.Run("put and list round-trip the pod", func(t *testing.T) { testRoundTrip(t, newCache(t)) })
	t.Run("resource versions decide which put wins", func(t *testing.T) { testVersions(t, newCache) })
	t.Run("delete", func(t *testing.T) { testDelete(t, newCache(t)) })
	t.Run("list is sorted by namespace then name", func(t *testing.T) { testSorted(t, newCache(t)) })
	t.Run("callers cannot change what is cached", func(t *testing.T) { testCopies(t, newCache(t)) })
	t.Run("invalid pods are refused", func(t *testing.T) { testInvalid(t, newCache(t)) })
	t.Run("concurrent puts keep the newest", func(t *testing.T) { testConcurrent(t, newCache(t)) })
}

// Pod is a pod with enough fields set to notice anything a cache drops. Times are whole
// seconds because that is what Kubernetes JSON keeps.
func Pod(namespace, name, rv string) *corev1.Pod {
	created := metav1.NewTime(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	grace := int64(30)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, ResourceVersion: rv,
			UID:               types.UID("uid-" + namespace + "-" + name),
			Labels:            map[string]string{"app": name},
			CreationTimestamp: created,
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node-1",
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "app", Image: "minik8s/echo:latest",
				Env:   []corev1.EnvVar{{Name: "RV", Value: rv}},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5", StartTime: &created},
	}
}

func list(t *testing.T, c podcache.Cache) []*corev1.Pod {
	t.Helper()
	pods, err := c.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return pods
}

func put(t *testing.T, c podcache.Cache, pod *corev1.Pod) {
	t.Helper()
	if err := c.Put(t.Context(), pod); err != nil {
		t.Fatalf("Put %s/%s@%s: %v", pod.Namespace, pod.Name, pod.ResourceVersion, err)
	}
}

func testRoundTrip(t *testing.T, c podcache.Cache) {
	if got := list(t, c); len(got) != 0 {
		t.Fatalf("new cache lists %d pods, want none", len(got))
	}
	want := Pod("default", "web", "7")
	put(t, c, want)
	if diff := cmp.Diff([]*corev1.Pod{want}, list(t, c)); diff != "" {
		t.Errorf("List after Put (-want +got):\n%s", diff)
	}
}

func testVersions(t *testing.T, newCache func(t *testing.T) podcache.Cache) {
	tests := []struct {
		name      string
		stored    string // resourceVersion already cached
		next      string // resourceVersion of the Put
		wantSaved string // resourceVersion cached afterwards
	}{
		{"newer replaces", "10", "11", "11"},
		{"older is ignored", "11", "10", "11"},
		{"equal is ignored", "11", "11", "11"},
		{"compares as numbers, not strings", "9", "10", "10"},
		{"older with more digits is still older", "100", "99", "100"},
		{"leading zeros do not make a version newer", "10", "0009", "10"},
		{"long versions compare exactly", "18446744073709551616", "18446744073709551617", "18446744073709551617"},
		{"a non-numeric version replaces a different one", "10", "local", "local"},
		{"an empty version replaces a numeric one", "10", "", ""},
		{"a numeric version replaces an empty one", "", "3", "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCache(t)
			stored := Pod("ns", "p", tt.stored)
			stored.Labels["from"] = "stored"
			put(t, c, stored)
			next := Pod("ns", "p", tt.next)
			next.Labels["from"] = "next"
			put(t, c, next)

			got := list(t, c)
			if len(got) != 1 {
				t.Fatalf("List has %d pods, want 1", len(got))
			}
			if got[0].ResourceVersion != tt.wantSaved {
				t.Errorf("cached resourceVersion = %q, want %q", got[0].ResourceVersion, tt.wantSaved)
			}
			// The version and the body must move together.
			wantFrom := "stored"
			if tt.wantSaved == tt.next && tt.next != tt.stored {
				wantFrom = "next"
			}
			if got[0].Labels["from"] != wantFrom {
				t.Errorf("cached pod came from the %s Put, want the %s one", got[0].Labels["from"], wantFrom)
			}
		})
	}
}

func testDelete(t *testing.T, c podcache.Cache) {
	put(t, c, Pod("a", "one", "1"))
	put(t, c, Pod("a", "two", "2"))
	if err := c.Delete(t.Context(), "a", "one"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := c.Delete(t.Context(), "a", "never-cached"); err != nil {
		t.Errorf("Delete of a missing pod = %v, want nil", err)
	}
	if diff := cmp.Diff([]*corev1.Pod{Pod("a", "two", "2")}, list(t, c)); diff != "" {
		t.Errorf("List after Delete (-want +got):\n%s", diff)
	}
	// A pod deleted and created again under the same name starts over.
	put(t, c, Pod("a", "one", "5"))
	if got := len(list(t, c)); got != 2 {
		t.Errorf("List after re-Put has %d pods, want 2", got)
	}
}

func testSorted(t *testing.T, c podcache.Cache) {
	order := [][2]string{{"a", "x"}, {"a", "y"}, {"a-b", "a"}, {"b", "a"}}
	for _, i := range rand.Perm(len(order)) {
		put(t, c, Pod(order[i][0], order[i][1], "1"))
	}
	var got [][2]string
	for _, p := range list(t, c) {
		got = append(got, [2]string{p.Namespace, p.Name})
	}
	if diff := cmp.Diff(order, got); diff != "" {
		t.Errorf("List order (-want +got):\n%s", diff)
	}
}

func testCopies(t *testing.T, c podcache.Cache) {
	pod := Pod("ns", "p", "1")
	put(t, c, pod)
	pod.Labels["app"] = "changed after Put"
	got := list(t, c)
	got[0].Labels["app"] = "changed after List"
	if diff := cmp.Diff([]*corev1.Pod{Pod("ns", "p", "1")}, list(t, c)); diff != "" {
		t.Errorf("cached pod changed through a caller's pointer (-want +got):\n%s", diff)
	}
}

func testInvalid(t *testing.T, c podcache.Cache) {
	for name, pod := range map[string]*corev1.Pod{
		"nil":          nil,
		"no name":      Pod("ns", "", "1"),
		"no namespace": Pod("", "p", "1"),
	} {
		t.Run(name, func(t *testing.T) {
			if err := c.Put(t.Context(), pod); !errors.Is(err, podcache.ErrInvalidPod) {
				t.Errorf("Put = %v, want ErrInvalidPod", err)
			}
		})
	}
	if got := len(list(t, c)); got != 0 {
		t.Errorf("List after refused Puts has %d pods, want 0", got)
	}
}

func testConcurrent(t *testing.T, c podcache.Cache) {
	const versions = 40
	var wg sync.WaitGroup
	errs := make(chan error, versions)
	for _, rv := range rand.Perm(versions) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Put(t.Context(), Pod("ns", "p", fmt.Sprint(rv+1))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Put: %v", err)
	}
	got := list(t, c)
	if len(got) != 1 || got[0].ResourceVersion != fmt.Sprint(versions) {
		t.Fatalf("after concurrent Puts the cache holds %v, want one pod at resourceVersion %d", rvs(got), versions)
	}
	if got[0].Spec.Containers[0].Env[0].Value != fmt.Sprint(versions) {
		t.Errorf("cached body is from resourceVersion %s, want %d", got[0].Spec.Containers[0].Env[0].Value, versions)
	}
}

func rvs(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name+"@"+p.ResourceVersion)
	}
	return out
}
