package informer

import (
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
)

func pod(ns, name, rv, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

func byNode(obj runtime.Object) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, errors.New("not a pod")
	}
	if p.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{p.Spec.NodeName}, nil
}

// describe renders a delta compactly for diffs.
func describe(d Delta) string {
	rvOf := func(o runtime.Object) string {
		if t, ok := o.(*Tombstone); ok {
			return "tombstone@" + t.Obj.(*corev1.Pod).ResourceVersion
		}
		return o.(*corev1.Pod).ResourceVersion
	}
	switch d.Type {
	case Added:
		k, _ := KeyOf(d.New)
		return "add " + k + "@" + rvOf(d.New)
	case Updated:
		k, _ := KeyOf(d.New)
		return "update " + k + "@" + rvOf(d.Old) + "->" + rvOf(d.New)
	case Deleted:
		k, _ := KeyOf(d.Old)
		return "delete " + k + "@" + rvOf(d.Old)
	}
	return string(d.Type)
}

type event struct {
	typ watch.EventType
	obj runtime.Object
}

func TestStoreApplyOrdersByRevision(t *testing.T) {
	tests := []struct {
		name   string
		listed []runtime.Object
		listRV string
		events []event
		want   []string // deltas of the events, in order
		keys   []string // keys left in the store
	}{
		{
			name:   "add then modify then delete",
			events: []event{{watch.Added, pod("ns", "a", "1", "")}, {watch.Modified, pod("ns", "a", "2", "")}, {watch.Deleted, pod("ns", "a", "3", "")}},
			want:   []string{"add ns/a@1", "update ns/a@1->2", "delete ns/a@3"},
			keys:   []string{},
		},
		{
			name:   "older modify after newer is dropped",
			events: []event{{watch.Added, pod("ns", "a", "5", "")}, {watch.Modified, pod("ns", "a", "4", "")}, {watch.Modified, pod("ns", "a", "5", "")}},
			want:   []string{"add ns/a@5"},
			keys:   []string{"ns/a"},
		},
		{
			name:   "late add of a deleted object does not resurrect it",
			events: []event{{watch.Added, pod("ns", "a", "1", "")}, {watch.Deleted, pod("ns", "a", "3", "")}, {watch.Modified, pod("ns", "a", "2", "")}},
			want:   []string{"add ns/a@1", "delete ns/a@3"},
			keys:   []string{},
		},
		{
			name:   "delete of an unknown object changes nothing but blocks older adds",
			events: []event{{watch.Deleted, pod("ns", "a", "7", "")}, {watch.Added, pod("ns", "a", "6", "")}, {watch.Added, pod("ns", "a", "8", "")}},
			want:   []string{"add ns/a@8"},
			keys:   []string{"ns/a"},
		},
		{
			name:   "events covered by the list are dropped",
			listed: []runtime.Object{pod("ns", "a", "3", "")},
			listRV: "10",
			events: []event{{watch.Added, pod("ns", "b", "9", "")}, {watch.Modified, pod("ns", "a", "10", "")}, {watch.Modified, pod("ns", "a", "11", "")}},
			want:   []string{"update ns/a@3->11"},
			keys:   []string{"ns/a"},
		},
		{
			name:   "older delete is dropped",
			events: []event{{watch.Added, pod("ns", "a", "5", "")}, {watch.Deleted, pod("ns", "a", "4", "")}},
			want:   []string{"add ns/a@5"},
			keys:   []string{"ns/a"},
		},
		{
			name:   "unknown revisions are applied in arrival order",
			events: []event{{watch.Added, pod("", "n", "", "")}, {watch.Modified, pod("", "n", "", "")}},
			want:   []string{"add n@", "update n@->"},
			keys:   []string{"n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(nil)
			if tt.listed != nil {
				if _, err := s.Replace(tt.listed, tt.listRV); err != nil {
					t.Fatalf("Replace: %v", err)
				}
			}
			var got []string
			for _, e := range tt.events {
				d, changed, err := s.Apply(e.typ, e.obj)
				if err != nil {
					t.Fatalf("Apply: %v", err)
				}
				if changed {
					got = append(got, describe(d))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.keys, s.ListKeys()); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStoreApplyRejects(t *testing.T) {
	tests := []struct {
		name string
		ev   event
	}{
		{"bad resourceVersion", event{watch.Added, pod("ns", "a", "abc", "")}},
		{"error event", event{watch.Error, pod("ns", "a", "1", "")}},
		{"not an object with metadata", event{watch.Added, &metav1.Status{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(nil)
			if _, changed, err := s.Apply(tt.ev.typ, tt.ev.obj); err == nil || changed {
				t.Errorf("Apply = changed %v, err %v; want an error and no change", changed, err)
			}
		})
	}
}

func TestStoreReplace(t *testing.T) {
	tests := []struct {
		name    string
		before  []event
		listed  []runtime.Object
		listRV  string
		want    []string
		keys    []string
		nowKeep map[string]string // key -> resourceVersion expected afterwards
	}{
		{
			name:   "adds, updates, unchanged and tombstones",
			before: []event{{watch.Added, pod("ns", "a", "1", "")}, {watch.Added, pod("ns", "b", "2", "")}, {watch.Added, pod("ns", "c", "3", "")}},
			listed: []runtime.Object{pod("ns", "a", "1", ""), pod("ns", "b", "4", ""), pod("ns", "d", "5", "")},
			listRV: "6",
			want:   []string{"update ns/b@2->4", "add ns/d@5", "delete ns/c@tombstone@3"},
			keys:   []string{"ns/a", "ns/b", "ns/d"},
		},
		{
			name:    "newer than the list is kept",
			before:  []event{{watch.Added, pod("ns", "a", "9", "")}, {watch.Added, pod("ns", "b", "8", "")}},
			listed:  []runtime.Object{pod("ns", "b", "4", "")},
			listRV:  "5",
			want:    nil,
			keys:    []string{"ns/a", "ns/b"},
			nowKeep: map[string]string{"ns/b": "8"},
		},
		{
			name:   "deleted after the list stays deleted",
			before: []event{{watch.Added, pod("ns", "a", "2", "")}, {watch.Deleted, pod("ns", "a", "7", "")}},
			listed: []runtime.Object{pod("ns", "a", "2", "")},
			listRV: "5",
			want:   nil,
			keys:   []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(nil)
			for _, e := range tt.before {
				if _, _, err := s.Apply(e.typ, e.obj); err != nil {
					t.Fatalf("Apply: %v", err)
				}
			}
			deltas, err := s.Replace(tt.listed, tt.listRV)
			if err != nil {
				t.Fatalf("Replace: %v", err)
			}
			var got []string
			for _, d := range deltas {
				got = append(got, describe(d))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.keys, s.ListKeys()); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			for key, rv := range tt.nowKeep {
				obj, _ := s.Get(key)
				if got := obj.(*corev1.Pod).ResourceVersion; got != rv {
					t.Errorf("%s at %s, want %s", key, got, rv)
				}
			}
		})
	}
}

func TestStoreIndexes(t *testing.T) {
	s := NewStore(Indexers{"node": byNode})
	for _, p := range []*corev1.Pod{pod("a", "p1", "1", "n1"), pod("a", "p2", "2", "n2"), pod("b", "p3", "3", "n1"), pod("b", "p4", "4", "")} {
		if _, _, err := s.Apply(watch.Added, p); err != nil {
			t.Fatal(err)
		}
	}
	// p1 moves to n2, p3 is deleted: both indexes must follow.
	if _, _, err := s.Apply(watch.Modified, pod("a", "p1", "5", "n2")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Apply(watch.Deleted, pod("b", "p3", "6", "n1")); err != nil {
		t.Fatal(err)
	}
	if err := s.AddIndexers(Indexers{"app": func(obj runtime.Object) ([]string, error) {
		return []string{obj.(*corev1.Pod).Labels["app"]}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		index, value string
		want         []string
	}{
		{"node", "n1", []string{}},
		{"node", "n2", []string{"a/p1", "a/p2"}},
		{NamespaceIndex, "a", []string{"a/p1", "a/p2"}},
		{NamespaceIndex, "b", []string{"b/p4"}},
		{"app", "p4", []string{"b/p4"}},
	}
	for _, tt := range tests {
		t.Run(tt.index+"="+tt.value, func(t *testing.T) {
			keys, err := s.IndexKeys(tt.index, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			objs, err := s.ByIndex(tt.index, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != len(tt.want) {
				t.Errorf("ByIndex returned %d objects, want %d", len(objs), len(tt.want))
			}
		})
	}
	if _, err := s.ByIndex("nope", "x"); err == nil {
		t.Error("ByIndex on a missing index: want an error")
	}
	if err := s.AddIndexers(Indexers{"node": byNode}); err == nil {
		t.Error("AddIndexers with a duplicate name: want an error")
	}
}

func TestLister(t *testing.T) {
	s := NewStore(Indexers{"node": byNode})
	for _, p := range []*corev1.Pod{pod("a", "web", "1", "n1"), pod("a", "db", "2", "n2"), pod("b", "web", "3", "n1")} {
		if _, _, err := s.Apply(watch.Added, p); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLister[*corev1.Pod](s)
	keys := func(ps []*corev1.Pod) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		sort.Strings(out)
		return out
	}
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		name string
		list func() ([]*corev1.Pod, error)
		want []string
	}{
		{"all", func() ([]*corev1.Pod, error) { return l.List(labels.Everything()) }, []string{"a/db", "a/web", "b/web"}},
		{"nil selector", func() ([]*corev1.Pod, error) { return l.List(nil) }, []string{"a/db", "a/web", "b/web"}},
		{"by label", func() ([]*corev1.Pod, error) { return l.List(web) }, []string{"a/web", "b/web"}},
		{"namespace and label", func() ([]*corev1.Pod, error) { return l.ListNamespace("a", web) }, []string{"a/web"}},
		{"by node index", func() ([]*corev1.Pod, error) { return l.ByIndex("node", "n1") }, []string{"a/web", "b/web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.list()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, keys(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	t.Run("get", func(t *testing.T) {
		p, err := l.Get("a", "db")
		if err != nil || p.Spec.NodeName != "n2" {
			t.Fatalf("Get(a, db) = %v, %v", p, err)
		}
		if _, err := l.Get("a", "missing"); !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("Get of a missing pod: err = %v, want ErrNotFound", err)
		}
	})
	t.Run("wrong type", func(t *testing.T) {
		if _, err := NewLister[*corev1.Node](s).Get("a", "db"); err == nil {
			t.Error("Get through a Node lister of a Pod store: want an error")
		}
	})
}
