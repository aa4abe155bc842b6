package mapper

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
