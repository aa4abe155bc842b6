package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/workqueue/clock"
)

// PodJobIndex files pods under the uid of the Job that controls them.
const PodJobIndex = "job.controller.uid"

// PodJobIndexFunc is the indexer of PodJobIndex.
func PodJobIndexFunc(obj runtime.Object) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod job index: got %T", obj)
	}
	if ref := jobRef(pod); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

func jobRef(pod *corev1.Pod) *metav1.OwnerReference {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != Kind.Kind || ref.APIVersion != Kind.GroupVersion().String() {
		return nil
	}
	return ref
}

// Config wires a Controller.
type Config struct {
	// Jobs and Pods are the shared informers; Pods has PodJobIndex.
	Jobs, Pods *informer.Informer
	API        API
	Recorder   Recorder
	Workers    int
	Resync     time.Duration
	Clock      clock.Clock
	Logger     *slog.Logger
}

// Controller runs Jobs. Build with New, run Start.
type Controller struct {
	cfg          Config
	jobs         informer.Lister[*batchv1.Job]
	pods         informer.Lister[*corev1.Pod]
	loop         *reconcile.Loop
	expectations reconcile.Expectations
	written      reconcile.Written
	log          *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	c := &Controller{
		cfg:  cfg,
		jobs: informer.NewLister[*batchv1.Job](cfg.Jobs.Store()),
		pods: informer.NewLister[*corev1.Pod](cfg.Pods.Store()),
		log:  cfg.Logger.With("controller", "job"),
	}
	c.loop = reconcile.New("job", cfg.Clock)
	c.loop.Sync, c.loop.Keys, c.loop.Logger = c.sync, c.keys, cfg.Logger
	c.loop.Synced = []func() bool{cfg.Jobs.HasSynced, cfg.Pods.HasSynced}
	c.loop.Tune(cfg.Workers, cfg.Resync)
	cfg.Jobs.AddEventHandler(informer.HandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(_, obj runtime.Object) {
			if j, ok := obj.(*batchv1.Job); ok {
				c.written.Behind(keyOf(j.Namespace, j.Name), j.ResourceVersion, c.cfg.Clock.Now())
			}
			c.enqueue(obj)
		},
		DeleteFunc: func(obj runtime.Object) {
			if key, err := informer.KeyOf(informer.DeletedObject(obj)); err == nil {
				c.expectations.Forget(key)
				c.written.Forget(key)
			}
		},
	})
	cfg.Pods.AddEventHandler(informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if key := c.jobOf(obj); key != "" {
				c.expectations.CreationObserved(key)
				c.loop.Add(key)
			}
		},
		UpdateFunc: func(_, obj runtime.Object) {
			if key := c.jobOf(obj); key != "" {
				if pod := obj.(*corev1.Pod); pod.DeletionTimestamp != nil {
					c.expectations.DeletionObserved(key, keyOf(pod.Namespace, pod.Name))
				}
				c.loop.Add(key)
			}
		},
		DeleteFunc: func(obj runtime.Object) {
			obj = informer.DeletedObject(obj)
			if key := c.jobOf(obj); key != "" {
				pod := obj.(*corev1.Pod)
				c.expectations.DeletionObserved(key, keyOf(pod.Namespace, pod.Name))
				c.loop.Add(key)
			}
		},
	})
	return c
}

// Start reconciles until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

func keyOf(namespace, name string) string { return namespace + "/" + name }

func (c *Controller) enqueue(obj runtime.Object) {
	if key, err := informer.KeyOf(obj); err == nil {
		c.loop.Add(key)
	}
}

// jobOf is the key of the Job controlling a pod, "" for other pods.
func (c *Controller) jobOf(obj runtime.Object) string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return ""
	}
	if ref := jobRef(pod); ref != nil {
		return keyOf(pod.Namespace, ref.Name)
	}
	return ""
}

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

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name := informer.SplitKey(key)
	cached, err := c.jobs.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.expectations.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	now := c.cfg.Clock.Now()
	if cached.DeletionTimestamp != nil {
		return nil // its pods go with it (garbage collector)
	}
	if c.written.Behind(key, cached.ResourceVersion, now) {
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	if !c.expectations.Satisfied(key, now) {
		return nil // the pods' events queue the Job again
	}
	pods, err := c.pods.ByIndex(PodJobIndex, string(cached.UID))
	if err != nil {
		return err
	}
	job := cached.DeepCopy()
	plan := Decide(job, pods, now)
	if err := c.delete(ctx, key, job, plan.Delete); err != nil {
		return err
	}
	created, createErr := c.create(ctx, key, job, plan)
	plan.Status.Active += int32(created)
	if !equality.Semantic.DeepEqual(plan.Status, job.Status) {
		c.events(job, plan.Status)
		job.Status = plan.Status
		out, err := c.cfg.API.UpdateStatus(ctx, job)
		if err != nil {
			return fmt.Errorf("update status of job %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
	}
	if createErr != nil {
		return createErr
	}
	if plan.After > 0 {
		return reconcile.Requeue{After: plan.After}
	}
	return nil
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

// create makes plan.Create pods in slow-start batches, each expected before it is made.
func (c *Controller) create(ctx context.Context, key string, job *batchv1.Job, plan Plan) (int, error) {
	n := plan.Create
	if n <= 0 {
		return 0, nil
	}
	c.expectations.ExpectCreations(key, n, c.cfg.Clock.Now())
	var mu sync.Mutex
	next := 0
	ok, attempted, err := reconcile.SlowStart(ctx, n, 1, reconcile.SlowStartParallel, func(ctx context.Context) error {
		index := -1
		if len(plan.Indexes) > 0 {
			mu.Lock()
			index = plan.Indexes[next]
			next++
			mu.Unlock()
		}
		pod, err := c.cfg.API.CreatePod(ctx, PodFromTemplate(job, index))
		if err != nil {
			c.expectations.CreationObserved(key)
			return err
		}
		c.cfg.Recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
		return nil
	})
	for range n - attempted {
		c.expectations.CreationObserved(key)
	}
	if err != nil {
		c.cfg.Recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return ok, fmt.Errorf("create pods of job %s (%d of %d made): %w", key, ok, n, err)
	}
	return ok, nil
}

// delete removes pods at once, in parallel.
func (c *Controller) delete(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod) error {
	if len(pods) == 0 {
		return nil
	}
	podKeys := make([]string, len(pods))
	for i, p := range pods {
		podKeys[i] = keyOf(p.Namespace, p.Name)
	}
	c.expectations.ExpectDeletions(key, podKeys, c.cfg.Clock.Now())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.cfg.API.DeletePod(ctx, p.Namespace, p.Name, p.UID)
			if err == nil {
				c.cfg.Recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
				return
			}
			c.expectations.DeletionObserved(key, podKeys[i])
			if errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrConflict) {
				return
			}
			mu.Lock()
			errs = append(errs, fmt.Errorf("delete pod %s: %w", podKeys[i], err))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
