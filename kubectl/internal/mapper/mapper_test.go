package mapper

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/scheme"
)

// discovery is a server's resource lists in the order kubectl prefers them.
func discovery() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod"},
			{Name: "nodes", SingularName: "node", Kind: "Node", ShortNames: []string{"no"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", ShortNames: []string{"deploy"}},
			{Name: "replicasets", SingularName: "replicaset", Namespaced: true, Kind: "ReplicaSet", ShortNames: []string{"rs"}},
		}},
		{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{
			{Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler", Namespaced: true, Kind: "HorizontalPodAutoscaler", ShortNames: []string{"hpa"}},
		}},
		{GroupVersion: "autoscaling/v1", APIResources: []metav1.APIResource{
			{Name: "horizontalpodautoscalers", SingularName: "horizontalpodautoscaler", Namespaced: true, Kind: "HorizontalPodAutoscaler", ShortNames: []string{"hpa"}},
		}},
		{GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "nodes", SingularName: "", Kind: "NodeMetrics"},
			{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics"},
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "clusterrolebindings", SingularName: "clusterrolebinding", Kind: "ClusterRoleBinding"},
		}},
		{GroupVersion: "storage.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "storageclasses", Kind: "StorageClass", ShortNames: []string{"sc"}},
		}},
	}
}

func TestResourceFor(t *testing.T) {
	m := New(discovery())
	gvr := func(g, v, r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: g, Version: v, Resource: r}
	}
	tests := []struct {
		in      schema.GroupVersionResource
		want    schema.GroupVersionResource
		wantErr string
	}{
		{in: gvr("", "", "pods"), want: gvr("", "v1", "pods")},
		{in: gvr("", "", "pod"), want: gvr("", "v1", "pods")},
		{in: gvr("", "", "po"), want: gvr("", "v1", "pods")},
		{in: gvr("", "", "Pods"), want: gvr("", "v1", "pods")},
		// The core group comes before metrics.k8s.io, which also serves nodes.
		{in: gvr("", "", "nodes"), want: gvr("", "v1", "nodes")},
		{in: gvr("metrics.k8s.io", "", "nodes"), want: gvr("metrics.k8s.io", "v1beta1", "nodes")},
		{in: gvr("metrics", "", "nodes"), want: gvr("metrics.k8s.io", "v1beta1", "nodes")},
		// Without a singular name in discovery, the kind lower-cased stands for it.
		{in: gvr("metrics.k8s.io", "", "nodemetrics"), want: gvr("metrics.k8s.io", "v1beta1", "nodes")},
		{in: gvr("", "", "storageclass"), want: gvr("storage.k8s.io", "v1", "storageclasses")},
		{in: gvr("", "", "deploy"), want: gvr("apps", "v1", "deployments")},
		{in: gvr("apps", "", "deploy"), want: gvr("apps", "v1", "deployments")},
		{in: gvr("app", "", "deployment"), want: gvr("apps", "v1", "deployments")},
		{in: gvr("ap", "", "rs"), want: gvr("apps", "v1", "replicasets")},
		{in: gvr("", "", "Deployment"), want: gvr("apps", "v1", "deployments")},
		{in: gvr("rbac", "", "clusterrolebinding"), want: gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings")},
		// The preferred version first, another only when asked for.
		{in: gvr("", "", "hpa"), want: gvr("autoscaling", "v2", "horizontalpodautoscalers")},
		{in: gvr("autoscaling", "v1", "horizontalpodautoscalers"), want: gvr("autoscaling", "v1", "horizontalpodautoscalers")},
		{in: gvr("", "", "log"), wantErr: `the server doesn't have a resource type "log"`},
		{in: gvr("", "", "foo"), wantErr: `the server doesn't have a resource type "foo"`},
		{in: gvr("apps", "", "foo"), wantErr: `the server doesn't have a resource type "foo" in group "apps"`},
		{in: gvr("apps", "", "pods"), wantErr: `the server doesn't have a resource type "pods" in group "apps"`},
		{in: gvr("apps", "v2", "deployments"), wantErr: `the server doesn't have a resource type "deployments" in group "apps"`},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			got, err := m.ResourceFor(tt.in)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ResourceFor(%v) = %v, %v; want error %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ResourceFor(%v) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestNamespaced(t *testing.T) {
	m := New(discovery())
	tests := []struct {
		gvr            schema.GroupVersionResource
		namespaced, ok bool
	}{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, namespaced: true, ok: true},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, namespaced: false, ok: true},
		{gvr: schema.GroupVersionResource{Group: "metrics.k8s.io", Version: "v1beta1", Resource: "pods"}, namespaced: true, ok: true},
		{gvr: schema.GroupVersionResource{Resource: "pods"}, ok: false},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods/log"}, ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.gvr.String(), func(t *testing.T) {
			namespaced, ok := m.Namespaced(tt.gvr)
			if namespaced != tt.namespaced || ok != tt.ok {
				t.Errorf("Namespaced(%v) = %v, %v; want %v, %v", tt.gvr, namespaced, ok, tt.namespaced, tt.ok)
			}
		})
	}
}

// A custom resource is described from discovery alone: its kind, scope, names, categories and
// subresources, with unstructured objects.
func TestDescribedResources(t *testing.T) {
	lists := append(discovery(), &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget", ShortNames: []string{"wd"}, Categories: []string{"all"},
			Verbs: metav1.Verbs{"get", "list", "deletecollection"}},
		{Name: "widgets/scale", Namespaced: true, Kind: "Scale"},
		{Name: "widgets/status", Namespaced: true, Kind: "Widget"},
		{Name: "gadgets", SingularName: "gadget", Kind: "Gadget", Verbs: metav1.Verbs{"get"}},
	}}, &metav1.APIResourceList{GroupVersion: "example.com/v1beta1", APIResources: []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget", Categories: []string{"all"}},
	}})
	m := New(lists)
	type described struct {
		GVK                      schema.GroupVersionKind
		Plural, Singular         string
		Namespaced, DeleteColl   bool
		ShortNames, Subresources []string
		NewKind, NewListKind     string
	}
	widget := described{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Plural: "widgets", Singular: "widget",
		Namespaced: true, DeleteColl: true, ShortNames: []string{"wd"}, Subresources: []string{"scale", "status"}, NewKind: "Widget", NewListKind: "WidgetList"}
	tests := []struct {
		name string
		get  func() (*scheme.Resource, bool)
		want *described
	}{
		{"by resource", func() (*scheme.Resource, bool) {
			return m.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"})
		}, &widget},
		{"by kind", func() (*scheme.Resource, bool) {
			return m.KindFor(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
		}, &widget},
		{"by kind in another version", func() (*scheme.Resource, bool) {
			return m.KindFor(schema.GroupVersionKind{Group: "example.com", Version: "v1beta1", Kind: "Widget"})
		}, &described{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1beta1", Kind: "Widget"}, Plural: "widgets", Singular: "widget",
			Namespaced: true, NewKind: "Widget", NewListKind: "WidgetList"}},
		{"cluster-scoped", func() (*scheme.Resource, bool) {
			return m.KindFor(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"})
		},
			&described{GVK: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, Plural: "gadgets", Singular: "gadget", NewKind: "Gadget", NewListKind: "GadgetList"}},
		{"unknown kind", func() (*scheme.Resource, bool) {
			return m.KindFor(schema.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Widget"})
		}, nil},
		{"subresource", func() (*scheme.Resource, bool) {
			return m.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets/scale"})
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok := tt.get()
			if ok != (tt.want != nil) {
				t.Fatalf("found %v, want %v", ok, tt.want != nil)
			}
			if !ok {
				return
			}
			if !res.Custom {
				t.Error("a discovered resource is not marked Custom")
			}
			slices.Sort(res.Subresources)
			got := described{GVK: res.GVK, Plural: res.Plural, Singular: res.Singular, Namespaced: res.Namespaced, DeleteColl: res.DeleteCollection,
				ShortNames: res.ShortNames, Subresources: res.Subresources,
				NewKind: res.New().GetObjectKind().GroupVersionKind().Kind, NewListKind: res.NewList().GetObjectKind().GroupVersionKind().Kind}
			if diff := cmp.Diff(*tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	var all []string
	for _, r := range m.Category("all") {
		all = append(all, r.GVR().String())
	}
	if diff := cmp.Diff([]string{"example.com/v1, Resource=widgets"}, all); diff != "" {
		t.Errorf("category all, each resource once in its preferred version (-want +got):\n%s", diff)
	}
}
