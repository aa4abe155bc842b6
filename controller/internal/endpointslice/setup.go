package endpointslice

import (
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		ServiceInformer:      c.Informers.Services(),
		PodInformer:          c.Informers.Pods(),
		NodeInformer:         c.Informers.Nodes(),
		SliceInformer:        c.Informers.EndpointSlices(informer.Indexers{ServiceIndex: ServiceIndexFunc}),
		Slices:               client.MustFor[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](c.Client),
		MaxEndpointsPerSlice: c.Config.MaxEndpointsPerSlice,
		Options:              c.EndpointOptions(),
	})
}
