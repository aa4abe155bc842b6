package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of EchoApp.
var GroupVersion = schema.GroupVersion{Group: "demo.minik8s.io", Version: "v1"}

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers EchoApp and EchoAppList with a scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &EchoApp{}, &EchoAppList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
