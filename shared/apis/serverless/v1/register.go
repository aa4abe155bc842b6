package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of serverless objects.
const GroupName = "serverless.minik8s.io"

// SchemeGroupVersion is the group and version these types are served at.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// AddToScheme registers the types with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Function{}, &FunctionList{}, &Workflow{}, &WorkflowList{},
		&WorkflowExecution{}, &WorkflowExecutionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
