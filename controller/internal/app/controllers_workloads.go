package app

// The constructors of the workload controllers and the garbage collector.

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/deployment"
	"minik8s.io/controller/internal/garbagecollector"
	"minik8s.io/controller/internal/job"
	"minik8s.io/controller/internal/podautoscaler"
	"minik8s.io/controller/internal/replicaset"
	"minik8s.io/controller/internal/ttlafterfinished"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
	"minik8s.io/shared/scheme"
)

func newGarbageCollector(c *Context) run.Runnable {
	infs := map[string]*informer.Informer{}
	for _, res := range garbagecollector.Collected() {
		infs[res.Plural] = c.Informers.MetadataFor(res.Plural, informer.Indexers{garbagecollector.OwnerIndex: garbagecollector.OwnerIndexFunc})
	}
	return garbagecollector.New(garbagecollector.Config{
		Informers: infs,
		Metadata: func(res *scheme.Resource) client.Writer[*metav1.PartialObjectMetadata] {
			return client.Metadata(c.Client, res)
		},
		Options: reconcile.Options{Logger: c.Logger},
	})
}

func newReplicaSets(c *Context) run.Runnable {
	return replicaset.New(replicaset.Config{
		ReplicaSetInformer: c.Informers.For(informer.ReplicaSets, nil),
		PodInformer:        c.Informers.Pods(),
		ReplicaSets:        client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.Client),
		Pods:               client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Recorder:           c.Recorder,
		Options:            reconcile.Options{Workers: c.Config.ReplicaSetWorkers, Logger: c.Logger},
	})
}

func newJobs(c *Context) run.Runnable {
	return job.New(job.Config{
		JobInformer: c.Informers.For(informer.Jobs, nil),
		PodInformer: c.Informers.For(informer.Pods, informer.Indexers{job.PodJobIndex: job.PodJobIndexFunc}),
		Jobs:        client.MustFor[*batchv1.Job, *batchv1.JobList](c.Client),
		Pods:        client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		Recorder:    c.Recorder,
		Options:     reconcile.Options{Logger: c.Logger},
	})
}

func newTTLAfterFinished(c *Context) run.Runnable {
	return ttlafterfinished.New(ttlafterfinished.Config{
		JobInformer: c.Informers.For(informer.Jobs, nil),
		Jobs:        client.MustFor[*batchv1.Job, *batchv1.JobList](c.Client),
		Options:     reconcile.Options{Logger: c.Logger},
	})
}

func newDeployments(c *Context) run.Runnable {
	return deployment.New(deployment.Config{
		DeploymentInformer: c.Informers.For(informer.Deployments, nil),
		ReplicaSetInformer: c.Informers.For(informer.ReplicaSets, nil),
		PodInformer:        c.Informers.Pods(),
		Deployments:        client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c.Client),
		ReplicaSets:        client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](c.Client),
		Recorder:           c.Recorder,
		Options:            reconcile.Options{Workers: c.Config.DeploymentWorkers, Logger: c.Logger},
	})
}

func newHPAs(c *Context) run.Runnable {
	return podautoscaler.New(podautoscaler.Config{
		HPAInformer:     c.Informers.For(informer.HorizontalPodAutoscalers, nil),
		PodInformer:     c.Informers.Pods(),
		HPAs:            client.MustFor[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](c.Client),
		Scales:          podautoscaler.ClientScales(c.Client),
		ResourceMetrics: podautoscaler.ClientMetrics(c.Client),
		Recorder:        c.Recorder,
		Options:         reconcile.Options{Resync: c.Config.HPASyncPeriod, Logger: c.Logger},
	})
}
