package clusterroleaggregation

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		ClusterRoleInformer: c.Informers.For(informer.ClusterRoles, nil),
		ClusterRoles:        client.MustFor[*rbacv1.ClusterRole, *rbacv1.ClusterRoleList](c.Client),
		Options:             reconcile.Options{Logger: c.Logger},
	})
}
