package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// PodJobIndex files pods under the uid of the Job that controls them.
const PodJobIndex = "job.controller.uid"

// PodJobIndexFunc is the indexer of PodJobIndex.
func PodJobIndexFunc(obj runtime.Object) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod job index: got %T", obj)
	}
	if ref := reconcile.ControllerOf(pod, Kind); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Config wires a Controller.
type Config struct {
	// JobInformer and PodInformer are the shared caches; PodInformer has PodJobIndex.
	JobInformer, PodInformer *informer.Informer
	Jobs                     client.Writer[*batchv1.Job]
	Pods                     client.Writer[*corev1.Pod]
	Recorder                 Recorder
	reconcile.Options
}

// Controller runs Jobs. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg          Config
	jobs         informer.Lister[*batchv1.Job]
	pods         informer.Lister[*corev1.Pod]
	expectations reconcile.Expectations
	children     reconcile.Children[*corev1.Pod]
	written      reconcile.Written
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:  cfg,
		jobs: informer.NewLister[*batchv1.Job](cfg.JobInformer.Store()),
		pods: informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
	}
	c.children = reconcile.Children[*corev1.Pod]{Writer: cfg.Pods, Expectations: &c.expectations, Recorder: cfg.Recorder, Clock: cfg.Clock}
	c.Controller = reconcile.NewController("job", cfg.Options).
		For(cfg.JobInformer, c.expectations.Forget, c.written.Forget).
		Watches(cfg.PodInformer, c.podEvents).
		// Finished Jobs are left out of the resync: nothing brings them back.
		Keys(c.keys).
		Complete(c)
	return c
}

// podEvents queue the Job controlling a changed pod, observing its creation or deletion.
func (c *Controller) podEvents(q reconcile.Queue) informer.Handler {
	return informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if key := reconcile.OwnerKey(obj, Kind); key != "" {
				c.expectations.CreationObserved(key)
				q.Add(key)
			}
		},
		UpdateFunc: func(_, obj runtime.Object) {
			if key := reconcile.OwnerKey(obj, Kind); key != "" {
				if pod := obj.(*corev1.Pod); pod.DeletionTimestamp != nil {
					c.expectations.DeletionObserved(key, keyOf(pod.Namespace, pod.Name))
				}
				q.Add(key)
			}
		},
		DeleteFunc: func(obj runtime.Object) {
			obj = informer.DeletedObject(obj)
			if key := reconcile.OwnerKey(obj, Kind); key != "" {
				pod := obj.(*corev1.Pod)
				c.expectations.DeletionObserved(key, keyOf(pod.Namespace, pod.Name))
				q.Add(key)
			}
		},
	}
}

func keyOf(namespace, name string) string { return namespace + "/" + name }

func (c *Controller) keys() []string {
	jobs, _ := c.jobs.List(nil)
	keys := make([]string, 0, len(jobs))
	for _, j := range jobs {
		if _, done := Finished(j); !done {
			keys = append(keys, keyOf(j.Namespace, j.Name))
		}
	}
	return keys
}

// Reconcile runs the Job of key: deletes and creates pods as Decide says, once the cache shows
// the last ones, and writes its status.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.jobs.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.expectations.Forget(key)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if cached.DeletionTimestamp != nil {
		return reconcile.Result{}, nil // its pods go with it (garbage collector)
	}
	if c.written.Behind(key, cached.ResourceVersion, now) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	if !c.expectations.Satisfied(key, now) {
		return reconcile.Result{}, nil // the pods' events queue the Job again
	}
	pods, err := c.pods.ByIndex(PodJobIndex, string(cached.UID))
	if err != nil {
		return reconcile.Result{}, err
	}
	job := cached.DeepCopy()
	plan := Decide(job, pods, now)
	if err := c.delete(ctx, key, job, plan.Delete); err != nil {
		return reconcile.Result{}, err
	}
	created, createErr := c.create(ctx, key, job, plan)
	plan.Status.Active += int32(created)
	if !equality.Semantic.DeepEqual(plan.Status, job.Status) {
		c.events(job, plan.Status)
		job.Status = plan.Status
		out, err := c.cfg.Jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("update status of job %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
	}
	if createErr != nil {
		return reconcile.Result{}, createErr
	}
	return reconcile.Result{RequeueAfter: plan.After}, nil
}

// events reports the Job finishing, once, when its status first says so.
func (c *Controller) events(job *batchv1.Job, next batchv1.JobStatus) {
	if _, done := Finished(job); done {
		return
	}
	for _, cond := range next.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			c.cfg.Recorder.Eventf(job, corev1.EventTypeNormal, "Completed", "Job completed")
		case batchv1.JobFailed:
			c.cfg.Recorder.Eventf(job, corev1.EventTypeWarning, cond.Reason, "%s", cond.Message)
		}
	}
}

// create makes plan.Create pods, with their completion indexes for an Indexed Job.
func (c *Controller) create(ctx context.Context, key string, job *batchv1.Job, plan Plan) (int, error) {
	made, err := c.children.Create(ctx, job, key, plan.Create, func(i int) *corev1.Pod {
		index := -1
		if len(plan.Indexes) > 0 {
			index = plan.Indexes[i]
		}
		return PodFromTemplate(job, index)
	})
	if err != nil {
		return made, fmt.Errorf("create pods of job %s: %w", key, err)
	}
	return made, nil
}

// delete removes pods at once, in parallel.
func (c *Controller) delete(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod) error {
	return c.children.Delete(ctx, job, key, pods)
}
