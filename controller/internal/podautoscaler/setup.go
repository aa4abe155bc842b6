package podautoscaler

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		HPAInformer:     c.Informers.For(informer.HorizontalPodAutoscalers, nil),
		PodInformer:     c.Informers.Pods(),
		HPAs:            client.MustFor[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](c.Client),
		Scales:          ClientScales(c.Client),
		ResourceMetrics: ClientMetrics(c.Client),
		Recorder:        c.Recorder,
		Options:         reconcile.Options{Resync: c.Config.HPASyncPeriod, Logger: c.Logger},
	})
}
