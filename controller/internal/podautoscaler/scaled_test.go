package podautoscaler

import (
	"context"
	"errors"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/discovery"
	"minik8s.io/shared/apierror"
)

// fakeDiscovery serves one custom group version.
type fakeDiscovery struct{}

func (fakeDiscovery) ServerGroups(context.Context) (*metav1.APIGroupList, error) {
	return &metav1.APIGroupList{}, nil
}

func (fakeDiscovery) ServerResources(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	if gv != "demo.example.com/v1" {
		return nil, apierror.NotFound("", "", gv)
	}
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{
		{Name: "echoapps", Kind: "EchoApp", Namespaced: true},
		{Name: "echoapps/scale", Kind: "Scale", Namespaced: true},
		{Name: "echoapps/status", Kind: "EchoApp", Namespaced: true},
		{Name: "gadgets", Kind: "Gadget", Namespaced: true},
	}}, nil
}

func TestScaleTargets(t *testing.T) {
	a := clientScales{kinds: discovery.New(fakeDiscovery{}, nil)}
	for _, tc := range []struct {
		apiVersion, kind string
		plural           string
		err              error
	}{
		{"apps/v1", "Deployment", "deployments", nil},
		{"demo.example.com/v1", "EchoApp", "echoapps", nil},
		{"demo.example.com/v1", "Gadget", "", apierror.ErrBadRequest},
		{"demo.example.com/v1", "Missing", "", apierror.ErrNotFound},
		{"other.example.com/v1", "Thing", "", apierror.ErrNotFound},
		{"v1", "ConfigMap", "", apierror.ErrBadRequest},
	} {
		t.Run(tc.apiVersion+"/"+tc.kind, func(t *testing.T) {
			res, err := a.scaled(t.Context(), autoscalingv2.CrossVersionObjectReference{APIVersion: tc.apiVersion, Kind: tc.kind, Name: "x"})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || res.Plural != tc.plural {
				t.Fatalf("resource %v, err %v; want %s", res, err, tc.plural)
			}
		})
	}
}
