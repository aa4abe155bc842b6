package informer

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

type typedPods struct{ calls []string }

func (c *typedPods) List(_ context.Context, ns string, _ metav1.ListOptions) (*corev1.PodList, error) {
	c.calls = append(c.calls, "list "+ns)
	return &corev1.PodList{}, nil
}

func (c *typedPods) Watch(_ context.Context, ns string, _ metav1.ListOptions) (watch.Interface, error) {
	c.calls = append(c.calls, "watch "+ns)
	return watch.NewEmptyWatch(), nil
}

func TestForNamespace(t *testing.T) {
	c := &typedPods{}
	lw := ForNamespace[*corev1.PodList](c, "web")
	if _, err := lw.List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := lw.Watch(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"list web", "watch web"}, c.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestApplyRaw(t *testing.T) {
	inf := New(Config{Name: "pods", ListerWatcher: newFakeLW("1")})
	podJSON := func(rv string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"web","name":"nginx","resourceVersion":"` + rv + `"},"spec":{"nodeName":"n1"}}`)
	}
	tests := []struct {
		name    string
		typ     string
		raw     []byte
		changed bool
		wantErr bool
	}{
		{"added", "ADDED", podJSON("5"), true, false},
		{"stale redelivery", "MODIFIED", podJSON("4"), false, false},
		{"modified", "MODIFIED", podJSON("6"), true, false},
		{"unknown type", "BOOKMARK", podJSON("7"), false, true},
		{"garbage", "ADDED", []byte("{"), false, true},
		{"unknown kind", "ADDED", []byte(`{"apiVersion":"v9","kind":"Nope","metadata":{"name":"x"}}`), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, err := inf.ApplyRaw(tt.typ, tt.raw)
			if changed != tt.changed || (err != nil) != tt.wantErr {
				t.Errorf("ApplyRaw = %v, %v; want changed %v, error %v", changed, err, tt.changed, tt.wantErr)
			}
		})
	}
	p, err := NewLister[*corev1.Pod](inf.Store()).Get("web", "nginx")
	if err != nil || p.ResourceVersion != "6" || p.Spec.NodeName != "n1" {
		t.Errorf("cached pod = %+v, %v; want nginx at 6 on n1", p, err)
	}
}

// ApplyEvent decodes a whole bus message into the object it is given, in one pass.
func TestApplyEvent(t *testing.T) {
	inf := New(Config{Name: "pods", ListerWatcher: newFakeLW("1")})
	body := func(typ, rv, node string) []byte {
		return []byte(`{"type":"` + typ + `","object":{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"web","name":"nginx","resourceVersion":"` +
			rv + `","labels":{"app":"web"}},"spec":{"nodeName":"` + node + `","containers":[{"name":"c","image":"i"}]}}}`)
	}
	tests := []struct {
		name    string
		body    []byte
		changed bool
		wantErr bool
	}{
		{"added", body("ADDED", "5", "n1"), true, false},
		{"stale redelivery", body("MODIFIED", "4", "n0"), false, false},
		{"modified", body("MODIFIED", "6", "n2"), true, false},
		{"unknown type", body("BOOKMARK", "7", "n3"), false, true},
		{"garbage", []byte(`{"type":"ADDED","object":{`), false, true},
		{"object of another shape", []byte(`{"type":"ADDED","object":{"metadata":"nope"}}`), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed, err := inf.ApplyEvent(tt.body, &corev1.Pod{})
			if changed != tt.changed || (err != nil) != tt.wantErr {
				t.Errorf("ApplyEvent = %v, %v; want changed %v, error %v", changed, err, tt.changed, tt.wantErr)
			}
		})
	}
	p, err := NewLister[*corev1.Pod](inf.Store()).Get("web", "nginx")
	if err != nil || p.ResourceVersion != "6" || p.Spec.NodeName != "n2" || p.Labels["app"] != "web" || p.Spec.Containers[0].Image != "i" {
		t.Errorf("cached pod = %+v, %v; want nginx at 6 on n2 with its label and container", p, err)
	}
}
