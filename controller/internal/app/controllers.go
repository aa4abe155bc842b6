package app

import (
	"fmt"
	"slices"
	"strings"

	"minik8s.io/controller/internal/deployment"
	"minik8s.io/controller/internal/endpoints"
	"minik8s.io/controller/internal/endpointslice"
	"minik8s.io/controller/internal/garbagecollector"
	"minik8s.io/controller/internal/ingress"
	"minik8s.io/controller/internal/job"
	"minik8s.io/controller/internal/nodelifecycle"
	"minik8s.io/controller/internal/podautoscaler"
	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/controller/internal/ttlafterfinished"
	"minik8s.io/controller/internal/volume"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/run"
)

// controllers are the controllers this binary runs, by the names --controllers takes
// (Kubernetes' where it has them). Adding one is one line here and its constructor below; it
// must ask the informers for what it reads before returning.
var controllers = []struct {
	name string
	new  func(ctx *Context) run.Runnable
}{
	{"deployment", newDeployments},
	{"endpoint", newEndpoints},
	{"endpointslice", newEndpointSlices},
	{"garbagecollector", newGarbageCollector},
	{"horizontalpodautoscaling", newHPAs},
	{"ingress", newIngress},
	{"job", newJobs},
	{"nodelifecycle", newNodeLifecycle},
	{"persistentvolume-binder", newVolumeBinder},
	{"replicaset", newReplicaSets},
	{"ttl-after-finished", newTTLAfterFinished},
}

// ControllerNames are the names --controllers knows.
func ControllerNames() []string {
	var names []string
	for _, c := range controllers {
		names = append(names, c.name)
	}
	return names
}

// enabled applies --controllers as Kubernetes reads it: "*" is every controller, "name"
// enables one, "-name" disables one; an empty list means "*".
func enabled(list []string, name string) bool {
	if len(list) == 0 {
		return true
	}
	if slices.Contains(list, "-"+name) {
		return false
	}
	return slices.Contains(list, name) || slices.Contains(list, "*")
}

// validateControllers refuses names no controller has.
func validateControllers(list []string) error {
	known := ControllerNames()
	for _, n := range list {
		if n == "*" {
			continue
		}
		if !slices.Contains(known, strings.TrimPrefix(n, "-")) {
			return fmt.Errorf("--controllers: unknown controller %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return nil
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
		PodNodeIndex:  informer.PodNodeIndex,
		API:           nodelifecycle.ClientAPI(c.Client),
		Recorder:      c.Recorder,
		Logger:        c.Logger,
	})
}

func newEndpoints(c *Context) run.Runnable {
	return endpoints.New(endpoints.Config{
		Services:  c.Informers.Services(),
		Pods:      c.Informers.Pods(),
		Endpoints: c.Informers.Endpoints(),
		API:       endpoints.ClientAPI(c.Client),
		Workers:   c.Config.EndpointWorkers,
		Resync:    c.Config.EndpointResync,
		Logger:    c.Logger,
	})
}

func newEndpointSlices(c *Context) run.Runnable {
	return endpointslice.New(endpointslice.Config{
		Services:             c.Informers.Services(),
		Pods:                 c.Informers.Pods(),
		Nodes:                c.Informers.Nodes(),
		Slices:               c.Informers.EndpointSlices(informer.Indexers{endpointslice.ServiceIndex: endpointslice.ServiceIndexFunc}),
		API:                  endpointslice.ClientAPI(c.Client),
		MaxEndpointsPerSlice: c.Config.MaxEndpointsPerSlice,
		Workers:              c.Config.EndpointWorkers,
		Resync:               c.Config.EndpointResync,
		Logger:               c.Logger,
	})
}

func newIngress(c *Context) run.Runnable {
	return ingress.New(ingress.Config{
		Ingresses: c.Informers.Ingresses(),
		Services:  c.Informers.Services(),
		Pods:      c.Informers.Pods(),
		API:       ingress.ClientAPI(c.Client),
		Deliverer: ingress.ExecDeliverer{Config: ingress.RESTConfig(c.ClientConfig)},
		Recorder:  c.Recorder,
		Class:     c.Config.IngressClass,
		Namespace: c.Config.IngressNamespace,
		Image:     c.Config.IngressNginxImage,
		Replicas:  c.Config.IngressNginxReplicas,
		NodePort:  int32(c.Config.IngressNodePort),
		Logger:    c.Logger,
	})
}

func newGarbageCollector(c *Context) run.Runnable {
	infs := map[string]*informer.Informer{}
	for _, res := range garbagecollector.Collected() {
		infs[res.Plural] = c.Informers.MetadataFor(res.Plural, informer.Indexers{garbagecollector.OwnerIndex: garbagecollector.OwnerIndexFunc})
	}
	return garbagecollector.New(garbagecollector.Config{
		Informers: infs,
		API:       garbagecollector.ClientAPI(c.Client),
		Logger:    c.Logger,
	})
}

func newVolumeBinder(c *Context) run.Runnable {
	return volume.New(volume.Config{
		Volumes:      c.Informers.For(informer.PersistentVolumes, nil),
		Claims:       c.Informers.For(informer.PersistentVolumeClaims, nil),
		Classes:      c.Informers.For(informer.StorageClasses, nil),
		API:          volume.ClientAPI(c.Client),
		Recorder:     c.Recorder,
		Provisioner:  volume.DefaultProvisioner,
		Root:         c.Config.PVRoot,
		DefaultClass: c.Config.DefaultStorageClass,
		Logger:       c.Logger,
	})
}

func newReplicaSets(c *Context) run.Runnable {
	return replicaset.New(replicaset.Config{
		ReplicaSets: c.Informers.For(informer.ReplicaSets, nil),
		Pods:        c.Informers.Pods(),
		API:         replicaset.ClientAPI(c.Client),
		Recorder:    c.Recorder,
		Workers:     c.Config.ReplicaSetWorkers,
		Logger:      c.Logger,
	})
}

func newJobs(c *Context) run.Runnable {
	return job.New(job.Config{
		Jobs:     c.Informers.For(informer.Jobs, nil),
		Pods:     c.Informers.For(informer.Pods, informer.Indexers{job.PodJobIndex: job.PodJobIndexFunc}),
		API:      job.ClientAPI(c.Client),
		Recorder: c.Recorder,
		Logger:   c.Logger,
	})
}

func newTTLAfterFinished(c *Context) run.Runnable {
	return ttlafterfinished.New(ttlafterfinished.Config{
		Jobs:   c.Informers.For(informer.Jobs, nil),
		API:    ttlafterfinished.ClientAPI(c.Client),
		Logger: c.Logger,
	})
}

func newDeployments(c *Context) run.Runnable {
	return deployment.New(deployment.Config{
		Deployments: c.Informers.For(informer.Deployments, nil),
		ReplicaSets: c.Informers.For(informer.ReplicaSets, nil),
		Pods:        c.Informers.Pods(),
		API:         deployment.ClientAPI(c.Client),
		Recorder:    c.Recorder,
		Workers:     c.Config.DeploymentWorkers,
		Logger:      c.Logger,
	})
}

func newHPAs(c *Context) run.Runnable {
	return podautoscaler.New(podautoscaler.Config{
		HPAs:       c.Informers.For(informer.HorizontalPodAutoscalers, nil),
		Pods:       c.Informers.Pods(),
		API:        podautoscaler.ClientAPI(c.Client),
		Metrics:    podautoscaler.ClientMetrics(c.Client),
		Recorder:   c.Recorder,
		SyncPeriod: c.Config.HPASyncPeriod,
		Logger:     c.Logger,
	})
}
