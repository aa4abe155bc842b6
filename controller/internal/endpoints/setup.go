package endpoints

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		ServiceInformer:   c.Informers.Services(),
		PodInformer:       c.Informers.Pods(),
		EndpointsInformer: c.Informers.Endpoints(),
		Endpoints:         client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](c.Client),
		Options:           c.EndpointOptions(),
	})
}
