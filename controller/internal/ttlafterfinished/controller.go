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
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/workqueue/clock"
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

// API reads and deletes Jobs.
type API interface {
	Get(ctx context.Context, namespace, name string) (*batchv1.Job, error)
	// Delete deletes the Job with this uid in the foreground, so its pods go first.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
}

// ClientAPI is API through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{client.MustFor[*batchv1.Job, *batchv1.JobList](c)}
}

type clientAPI struct {
	jobs *client.Typed[*batchv1.Job, *batchv1.JobList]
}

func (a clientAPI) Get(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	return a.jobs.Get(ctx, ns, name, metav1.GetOptions{})
}

func (a clientAPI) Delete(ctx context.Context, ns, name string, uid types.UID) error {
	fg := metav1.DeletePropagationForeground
	return a.jobs.Delete(ctx, ns, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &fg})
}

// Config wires a Controller.
type Config struct {
	Jobs   *informer.Informer
	API    API
	Resync time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Controller deletes expired Jobs. Build with New, run Start.
type Controller struct {
	cfg  Config
	jobs informer.Lister[*batchv1.Job]
	loop *reconcile.Loop
	log  *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	c := &Controller{cfg: cfg, jobs: informer.NewLister[*batchv1.Job](cfg.Jobs.Store()), log: cfg.Logger.With("controller", "ttl-after-finished")}
	c.loop = reconcile.New("ttl-after-finished", cfg.Clock)
	c.loop.Sync, c.loop.Keys, c.loop.Logger = c.sync, c.keys, cfg.Logger
	c.loop.Synced = []func() bool{cfg.Jobs.HasSynced}
	if cfg.Resync > 0 {
		c.loop.Resync = cfg.Resync
	}
	add := func(obj runtime.Object) {
		if j, ok := obj.(*batchv1.Job); ok && j.Spec.TTLSecondsAfterFinished != nil && j.DeletionTimestamp == nil {
			c.loop.Add(j.Namespace + "/" + j.Name)
		}
	}
	cfg.Jobs.AddEventHandler(informer.HandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj runtime.Object) { add(obj) }})
	return c
}

// Start runs until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

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

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name := informer.SplitKey(key)
	job, err := c.jobs.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !c.expired(job) {
		return c.wait(job)
	}
	// The cache may hold an older Job (its TTL raised a moment ago): check the API's.
	fresh, err := c.cfg.API.Get(ctx, ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get job %s: %w", key, err)
	}
	if !c.expired(fresh) {
		return c.wait(fresh)
	}
	if err := c.cfg.API.Delete(ctx, ns, name, fresh.UID); err != nil && !errors.Is(err, apierror.ErrNotFound) && !errors.Is(err, apierror.ErrConflict) {
		return fmt.Errorf("delete job %s: %w", key, err)
	}
	c.log.Info("deleted a finished job past its TTL", "key", key)
	return nil
}

func (c *Controller) expired(job *batchv1.Job) bool {
	at, ok := Expiry(job)
	return ok && job.DeletionTimestamp == nil && !c.cfg.Clock.Now().Before(at)
}

// wait looks at the Job again when its TTL ends.
func (c *Controller) wait(job *batchv1.Job) error {
	at, ok := Expiry(job)
	if !ok || job.DeletionTimestamp != nil {
		return nil
	}
	return reconcile.Requeue{After: at.Sub(c.cfg.Clock.Now())}
}
