package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/bus"
)

type recordingSink struct {
	mu      sync.Mutex
	updates []string // "<name>@<rv>"
	removed []types.UID
}

func (r *recordingSink) Update(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, p.Name+"@"+p.ResourceVersion)
}

func (r *recordingSink) Remove(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, uid)
}

type mapCache struct{ pods map[string]*corev1.Pod }

func (m *mapCache) Put(_ context.Context, p *corev1.Pod) error {
	m.pods[p.Namespace+"/"+p.Name] = p
	return nil
}
func (m *mapCache) Delete(_ context.Context, ns, name string) error {
	delete(m.pods, ns+"/"+name)
	return nil
}
func (m *mapCache) List(context.Context) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range m.pods {
		out = append(out, p)
	}
	return out, nil
}

type listFunc func() *corev1.PodList

func (f listFunc) List(context.Context, string, metav1.ListOptions) (*corev1.PodList, error) {
	return f(), nil
}

func pod(name, uid, rv, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid), ResourceVersion: rv},
		Spec: corev1.PodSpec{NodeName: node}}
}

func delivery(t *testing.T, typ string, p *corev1.Pod) bus.Delivery {
	obj, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(bus.Event{Type: typ, Object: obj})
	return bus.Delivery{Message: bus.Message{Body: body}}
}

func TestSourceDropsStaleAndForeignEvents(t *testing.T) {
	sink := &recordingSink{}
	cache := &mapCache{pods: map[string]*corev1.Pod{}}
	s := newSource("n1", nil, sink, cache, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for _, d := range []bus.Delivery{
		delivery(t, bus.Added, pod("a", "u1", "5", "n1")),
		delivery(t, bus.Modified, pod("a", "u1", "4", "n1")), // stale: dropped
		delivery(t, bus.Modified, pod("a", "u1", "7", "n1")),
		delivery(t, bus.Added, pod("b", "u2", "8", "n2")), // another node's
		delivery(t, bus.Deleted, pod("a", "u1", "9", "n1")),
		{Message: bus.Message{Body: []byte("not json")}},
	} {
		if err := s.handle(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"a@5", "a@7"}, sink.updates); diff != "" {
		t.Fatalf("updates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]types.UID{"u1"}, sink.removed); diff != "" {
		t.Fatalf("removed: %s", diff)
	}
	if len(cache.pods) != 0 {
		t.Fatalf("deleted pod still cached: %v", cache.pods)
	}
}

func TestSourceRelistForgetsWhatTheAPIDropped(t *testing.T) {
	sink := &recordingSink{}
	cache := &mapCache{pods: map[string]*corev1.Pod{}}
	items := []corev1.Pod{*pod("a", "u1", "5", "n1"), *pod("b", "u2", "6", "n1")}
	s := newSource("n1", listFunc(func() *corev1.PodList { return &corev1.PodList{Items: items} }), sink, cache, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if err := s.relist(ctx); err != nil {
		t.Fatal(err)
	}
	items = items[1:] // a was deleted while the kubelet was not listening
	if err := s.relist(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a@5", "b@6"}, sink.updates); diff != "" {
		t.Fatalf("updates: %s", diff)
	}
	if diff := cmp.Diff([]types.UID{"u1"}, sink.removed); diff != "" {
		t.Fatalf("removed: %s", diff)
	}
	if _, ok := cache.pods["default/b"]; !ok || len(cache.pods) != 1 {
		t.Fatalf("cache %v", cache.pods)
	}

	// A new kubelet with no API restores from the cache alone.
	sink2 := &recordingSink{}
	s2 := newSource("n1", nil, sink2, cache, slog.New(slog.DiscardHandler))
	n, err := s2.fromCache(ctx)
	if err != nil || n != 1 {
		t.Fatalf("fromCache: %d %v", n, err)
	}
	if diff := cmp.Diff([]string{"b@6"}, sink2.updates); diff != "" {
		t.Fatalf("restored: %s", diff)
	}
}
