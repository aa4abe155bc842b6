package informer

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/testwait"
)

func emptySource(*scheme.Resource, bool) ListerWatcher {
	return ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("no watch")
		},
	}
}

func delivery(t *testing.T, resource, eventType string, obj any) bus.Delivery {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(bus.Event{Type: eventType, Object: raw})
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Message: bus.Message{RoutingKey: resource + ".x." + eventType, Body: body,
		Headers: map[string]string{bus.HeaderResource: resource}}}
}

func TestFactoryHandleRoutesToTheResourceInformers(t *testing.T) {
	f := NewFactory(emptySource, FactoryConfig{})
	pods, nodes := f.Pods(), f.Nodes()
	rsMeta, rs := f.MetadataFor(ReplicaSets, nil), f.For(ReplicaSets, nil)
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", ResourceVersion: "5"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	three := int32(3)
	replicaSet := &appsv1.ReplicaSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: "6", Labels: map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "u1"}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &three}}
	tests := []struct {
		name string
		d    bus.Delivery
	}{
		{"pod", delivery(t, Pods, bus.Added, pod)},
		{"replicaset", delivery(t, ReplicaSets, bus.Added, replicaSet)},
		{"undecodable body is acknowledged", bus.Delivery{Message: bus.Message{RoutingKey: "pods.x", Body: []byte("{"), Headers: map[string]string{bus.HeaderResource: Pods}}}},
		{"resource nobody caches is acknowledged", delivery(t, Services, bus.Added, map[string]string{"kind": "Service"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := f.Handle(t.Context(), tt.d); err != nil {
				t.Errorf("Handle = %v, want nil (the bus is a hint)", err)
			}
		})
	}
	byNode, err := pods.Store().ByIndex(PodNodeIndex, "n1")
	if err != nil || len(byNode) != 1 {
		t.Fatalf("pods indexed under n1: %d (err %v), want 1", len(byNode), err)
	}
	if nodes.Store().Len() != 0 {
		t.Errorf("the node cache got %d objects from a pod message", nodes.Store().Len())
	}
	if f.Pods() != pods || f.For(Pods, nil) != pods {
		t.Error("asking for pods again made a second informer")
	}
	got, ok := rs.Store().Get("default/web")
	if typed, isRS := got.(*appsv1.ReplicaSet); !ok || !isRS || *typed.Spec.Replicas != 3 {
		t.Errorf("typed replicaset cache holds %#v", got)
	}
	got, ok = rsMeta.Store().Get("default/web")
	m, isMeta := got.(*metav1.PartialObjectMetadata)
	if !ok || !isMeta || m.Kind != "ReplicaSet" || m.APIVersion != "apps/v1" || len(m.OwnerReferences) != 1 || m.Labels["app"] != "web" {
		t.Errorf("metadata replicaset cache holds %#v", got)
	}
	if want := []string{Nodes, Pods, ReplicaSets}; !reflect.DeepEqual(f.Resources(), want) {
		t.Errorf("Resources() = %v, want %v", f.Resources(), want)
	}
}

func TestFactoryPanicsOnWiringMistakes(t *testing.T) {
	mustPanic := func(name string, fn func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		fn()
	}
	f := NewFactory(emptySource, FactoryConfig{})
	mustPanic("a resource the scheme lacks", func() { f.For("widgets", nil) })
	f.Nodes()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = f.Start(ctx); close(done) }()
	testwait.For(t, "factory started", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.started })
	mustPanic("a new informer after Start", func() { f.Pods() })
	if f.Nodes() == nil {
		t.Error("an existing informer after Start")
	}
	cancel()
	<-done
}

// fakeAPI answers every list of every resource with one object named "a", as the apiserver
// would: typed, or as PartialObjectMetadata when asked for.
func fakeAPI(t *testing.T) *client.Client {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res *scheme.Resource
		for _, candidate := range scheme.Resources {
			if strings.HasSuffix(r.URL.Path, "/"+candidate.Plural) && strings.Contains(r.URL.Path, candidate.GVK.GroupVersion().String()) {
				res = candidate
			}
		}
		if res == nil || r.URL.Query().Get("watch") != "" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		ns := ""
		if res.Namespaced {
			ns = `"namespace":"n",`
		}
		apiVersion, kind := res.GVK.ToAPIVersionAndKind()
		itemHead := ""
		if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
			apiVersion, kind, itemHead = "meta.k8s.io/v1", "PartialObjectMetadata", `"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata",`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"%sList","metadata":{"resourceVersion":"7"},"items":[{%s"metadata":{%s"name":"a","resourceVersion":"7","labels":{"l":"v"}}}]}`,
			apiVersion, kind, itemHead, ns)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c, err := client.New(&client.Config{Server: srv.URL, Token: "t", CAData: ca})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientSourceServesEveryResourceOfTheScheme(t *testing.T) {
	f := NewFactory(ClientSource(fakeAPI(t)), FactoryConfig{})
	for _, res := range scheme.Resources {
		f.For(res.Plural, nil)
		f.MetadataFor(res.Plural, nil)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = f.Start(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	testwait.For(t, "every cache listed", f.HasSynced)
	for _, res := range scheme.Resources {
		t.Run(res.Plural, func(t *testing.T) {
			key := "a"
			if res.Namespaced {
				key = "n/a"
			}
			got, ok := f.For(res.Plural, nil).Store().Get(key)
			if want := reflect.TypeOf(res.New()); !ok || reflect.TypeOf(got) != want {
				t.Errorf("typed cache holds %T (found %v), want %v", got, ok, want)
			}
			got, ok = f.MetadataFor(res.Plural, nil).Store().Get(key)
			m, isMeta := got.(*metav1.PartialObjectMetadata)
			if !ok || !isMeta || m.GroupVersionKind() != res.GVK || m.Labels["l"] != "v" {
				t.Errorf("metadata cache holds %#v (found %v), want %s metadata", got, ok, res.GVK.Kind)
			}
		})
	}
}
