package app

// The constructors of the controllers of Services, Ingress, nodes and volumes.

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"

	"minik8s.io/controller/internal/endpoints"
	"minik8s.io/controller/internal/endpointslice"
	"minik8s.io/controller/internal/ingress"
	"minik8s.io/controller/internal/nodelifecycle"
	"minik8s.io/controller/internal/volume"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

func newNodeLifecycle(c *Context) run.Runnable {
	return nodelifecycle.New(nodelifecycle.Config{
		Settings: nodelifecycle.Settings{
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

// endpointOptions are the loop's options of the Endpoints and EndpointSlice controllers.
func endpointOptions(c *Context) reconcile.Options {
	return reconcile.Options{Workers: c.Config.EndpointWorkers, Resync: c.Config.EndpointResync, Logger: c.Logger}
}

func newEndpoints(c *Context) run.Runnable {
	return endpoints.New(endpoints.Config{
		ServiceInformer:   c.Informers.Services(),
		PodInformer:       c.Informers.Pods(),
		EndpointsInformer: c.Informers.Endpoints(),
		Endpoints:         client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](c.Client),
		Options:           endpointOptions(c),
	})
}

func newEndpointSlices(c *Context) run.Runnable {
	return endpointslice.New(endpointslice.Config{
		ServiceInformer:      c.Informers.Services(),
		PodInformer:          c.Informers.Pods(),
		NodeInformer:         c.Informers.Nodes(),
		SliceInformer:        c.Informers.EndpointSlices(informer.Indexers{endpointslice.ServiceIndex: endpointslice.ServiceIndexFunc}),
		Slices:               client.MustFor[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](c.Client),
		MaxEndpointsPerSlice: c.Config.MaxEndpointsPerSlice,
		Options:              endpointOptions(c),
	})
}

func newIngress(c *Context) run.Runnable {
	return ingress.New(ingress.Config{
		IngressInformer: c.Informers.Ingresses(),
		ServiceInformer: c.Informers.Services(),
		PodInformer:     c.Informers.Pods(),
		Namespaces:      client.MustFor[*corev1.Namespace, *corev1.NamespaceList](c.Client),
		Services:        client.MustFor[*corev1.Service, *corev1.ServiceList](c.Client),
		Pods:            client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		ConfigMaps:      client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](c.Client),
		Ingresses:       client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](c.Client),
		Deliverer:       ingress.ExecDeliverer{Config: ingress.RESTConfig(c.ClientConfig)},
		Recorder:        c.Recorder,
		Class:           c.Config.IngressClass,
		Namespace:       c.Config.IngressNamespace,
		Image:           c.Config.IngressNginxImage,
		Replicas:        c.Config.IngressNginxReplicas,
		NodePort:        int32(c.Config.IngressNodePort),
		Logger:          c.Logger,
	})
}

func newVolumeBinder(c *Context) run.Runnable {
	return volume.New(volume.Config{
		VolumeInformer: c.Informers.For(informer.PersistentVolumes, nil),
		ClaimInformer:  c.Informers.For(informer.PersistentVolumeClaims, nil),
		ClassInformer:  c.Informers.For(informer.StorageClasses, nil),
		Volumes:        client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](c.Client),
		Claims:         client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c.Client),
		Classes:        client.MustFor[*storagev1.StorageClass, *storagev1.StorageClassList](c.Client),
		Recorder:       c.Recorder,
		Provisioner:    volume.DefaultProvisioner,
		Root:           c.Config.PVRoot,
		DefaultClass:   c.Config.DefaultStorageClass,
		Options:        reconcile.Options{Logger: c.Logger},
	})
}
