package nodelifecycle

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		Settings: Settings{
			GracePeriod:       c.Config.NodeMonitorGracePeriod,
			DefaultToleration: c.Config.PodEvictionTimeout,
		},
		MonitorPeriod: c.Config.NodeMonitorPeriod,
		NodeInformer:  c.Informers.Nodes(),
		LeaseInformer: c.Informers.Leases(),
		PodInformer:   c.Informers.Pods(),
		PodNodeIndex:  informer.PodNodeIndex,
		Nodes:         client.MustFor[*corev1.Node, *corev1.NodeList](c.Client),
		Pods:          client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Recorder:      c.Recorder,
		Logger:        c.Logger,
	})
}
