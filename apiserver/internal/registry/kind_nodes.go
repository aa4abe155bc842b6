package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
)

// Nodes keep the status the kubelet registers them with (capacity, conditions), each gets a
// pod CIDR, and field selectors pick the cordoned ones.
var _ = register(Kind[*corev1.Node]{
	Resource:         served("nodes"),
	PrepareForCreate: func(*corev1.Node) {},
	Default:          defaults.Node,
	Validation:       validation.Node,
	Fields:           nodeFields,
	Table:            tables.Node,
	Allocates:        true,
})

func nodeFields(node *corev1.Node) fields.Set {
	return fields.Set{"spec.unschedulable": fmt.Sprint(node.Spec.Unschedulable)}
}
