package ttlafterfinished

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// Expiry is when a finished Job with ttlSecondsAfterFinished may be deleted: its Complete or
// Failed condition's transition (the completion time when there is none) plus the TTL. ok is
// false for a Job without a TTL or not finished.
func Expiry(job *batchv1.Job) (at time.Time, ok bool) {
	if job.Spec.TTLSecondsAfterFinished == nil {
		return time.Time{}, false
	}
	var finished time.Time
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			finished = c.LastTransitionTime.Time
			break
		}
	}
	if finished.IsZero() {
		return time.Time{}, false
	}
	return finished.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second), true
}

// Config wires a Controller.
type Config struct {
	JobInformer *informer.Informer
	Jobs        client.Writer[*batchv1.Job]
	reconcile.Options
}

// Controller deletes expired Jobs. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg  Config
	jobs informer.Lister[*batchv1.Job]
	log  *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{cfg: cfg, jobs: informer.NewLister[*batchv1.Job](cfg.JobInformer.Store()), log: cfg.Logger.With("controller", "ttl-after-finished")}
	c.Controller = reconcile.NewController("ttl-after-finished", cfg.Options).
		Map(cfg.JobInformer, func(obj runtime.Object) []string {
			if j, ok := obj.(*batchv1.Job); ok && j.Spec.TTLSecondsAfterFinished != nil && j.DeletionTimestamp == nil {
				return []string{j.Namespace + "/" + j.Name}
			}
			return nil
		}).
		Keys(c.keys).
		Complete(c)
	return c
}

func (c *Controller) keys() []string {
	jobs, _ := c.jobs.List(nil)
	var keys []string
	for _, j := range jobs {
		if _, ok := Expiry(j); ok && j.DeletionTimestamp == nil {
			keys = append(keys, j.Namespace+"/"+j.Name)
		}
	}
	return keys
}

// Reconcile deletes the Job of key if its TTL has run out, and otherwise looks again when it
// will.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	job, err := c.jobs.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if !c.expired(job) {
		return c.wait(job), nil
	}
	// The cache may hold an older Job (its TTL raised a moment ago): check the API's.
	fresh, err := c.cfg.Jobs.Get(ctx, ns, name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("get job %s: %w", key, err)
	}
	if !c.expired(fresh) {
		return c.wait(fresh), nil
	}
	// In the foreground, so its pods go first.
	fg := metav1.DeletePropagationForeground
	err = c.cfg.Jobs.Delete(ctx, ns, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &fresh.UID}, PropagationPolicy: &fg})
	if err != nil && !errors.Is(err, apierror.ErrNotFound) && !errors.Is(err, apierror.ErrConflict) {
		return reconcile.Result{}, fmt.Errorf("delete job %s: %w", key, err)
	}
	c.log.Info("deleted a finished job past its TTL", "key", key)
	return reconcile.Result{}, nil
}

func (c *Controller) expired(job *batchv1.Job) bool {
	at, ok := Expiry(job)
	return ok && job.DeletionTimestamp == nil && !c.cfg.Clock.Now().Before(at)
}

// wait looks at the Job again when its TTL ends.
func (c *Controller) wait(job *batchv1.Job) reconcile.Result {
	at, ok := Expiry(job)
	if !ok || job.DeletionTimestamp != nil {
		return reconcile.Result{}
	}
	return reconcile.Result{RequeueAfter: at.Sub(c.cfg.Clock.Now())}
}
