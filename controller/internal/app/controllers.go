package app

import (
	"minik8s.io/controller/internal/informers"
	"minik8s.io/controller/internal/nodelifecycle"
	"minik8s.io/shared/run"
)

// controllers are the controllers this binary runs. Adding one is one line here and its
// constructor below; it must ask the informers for what it reads before returning.
var controllers = []struct {
	name string
	new  func(ctx *Context) run.Runnable
}{
	{"nodelifecycle", newNodeLifecycle},
}

func newNodeLifecycle(c *Context) run.Runnable {
	return nodelifecycle.New(nodelifecycle.Config{
		Settings: nodelifecycle.Settings{
			GracePeriod:       c.Config.NodeMonitorGracePeriod,
			DefaultToleration: c.Config.PodEvictionTimeout,
		},
		MonitorPeriod: c.Config.NodeMonitorPeriod,
		Nodes:         c.Informers.Nodes(),
		Leases:        c.Informers.Leases(),
		Pods:          c.Informers.Pods(),
		PodNodeIndex:  informers.PodNodeIndex,
		API:           nodelifecycle.ClientAPI(c.Client),
		Recorder:      c.Recorder,
		Logger:        c.Logger,
	})
}
