package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	"minik8s.io/apiserver/internal/defaults"
	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/apierror"
)

// Namespaces start Active, turn Terminating when deleted and go once their content is gone
// (spec.finalizers holds them until then; see namespaces.go); the system ones stay.
var _ = register(Kind[*corev1.Namespace]{
	Resource:         served("namespaces"),
	PrepareForCreate: func(ns *corev1.Namespace) { ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive} },
	Default:          defaults.Namespace,
	Validation:       validation.Namespace,
	Fields:           func(ns *corev1.Namespace) fields.Set { return fields.Set{"status.phase": string(ns.Status.Phase)} },
	Table:            tables.Namespace,
	CheckDelete:      checkNamespaceDelete,
	Finalizing:       func(ns *corev1.Namespace) bool { return len(ns.Spec.Finalizers) > 0 },
	MarkDeleting:     func(ns *corev1.Namespace) { ns.Status.Phase = corev1.NamespaceTerminating },
})

// ProtectedNamespaces may not be deleted, as in Kubernetes.
var ProtectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

func checkNamespaceDelete(name string) error {
	if ProtectedNamespaces[name] {
		return apierror.New(apierror.ErrForbidden, "namespaces %q is forbidden: this namespace may not be deleted", name)
	}
	return nil
}
