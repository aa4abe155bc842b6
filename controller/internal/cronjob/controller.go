package cronjob

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// Name is the controller's name in --controllers, as in Kubernetes.
const Name = "cronjob"

// Resource is the plural its informer caches.
const Resource = "cronjobs"

// Kind is the owner kind of a CronJob's Jobs.
var Kind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// Config wires a Controller.
type Config struct {
	CronJobInformer, JobInformer *informer.Informer
	CronJobs                     client.Writer[*batchv1.CronJob]
	Jobs                         client.Writer[*batchv1.Job]
	Recorder                     record.EventRecorder
	reconcile.Options
}

// Controller makes CronJobs' Jobs. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg      Config
	cronJobs informer.Lister[*batchv1.CronJob]
	jobs     informer.Lister[*batchv1.Job]
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:      cfg,
		cronJobs: informer.NewLister[*batchv1.CronJob](cfg.CronJobInformer.Store()),
		jobs:     informer.NewLister[*batchv1.Job](cfg.JobInformer.Store()),
	}
	c.Controller = reconcile.NewController(Name, cfg.Options).
		For(cfg.CronJobInformer).
		Owns(cfg.JobInformer, Kind).
		Complete(c)
	return c
}

// Reconcile syncs the CronJob of key and looks again at its next schedule time.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cj, err := c.cronJobs.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	jobs, err := c.owned(ctx, cj)
	if err != nil {
		return reconcile.Result{}, err
	}
	p := Decide(cj, jobs, c.cfg.Clock.Now())
	for _, e := range p.Events {
		c.cfg.Recorder.Eventf(cj, e.Type, e.Reason, "%s", e.Message)
	}
	for _, j := range p.Delete {
		bg := metav1.DeletePropagationBackground
		err := c.cfg.Jobs.Delete(ctx, j.Namespace, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg, Preconditions: &metav1.Preconditions{UID: &j.UID}})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			c.cfg.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
			return reconcile.Result{}, fmt.Errorf("delete job %s/%s: %w", j.Namespace, j.Name, err)
		}
		c.cfg.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", j.Name)
	}
	var createErr error
	if p.Create != nil {
		created, err := c.cfg.Jobs.Create(ctx, p.Create, metav1.CreateOptions{})
		switch {
		case errors.Is(err, apierror.ErrAlreadyExists):
			// Made by an earlier sync whose status write was lost: the next sync finds it
			// among the owned Jobs.
			createErr = fmt.Errorf("job %s/%s already exists", p.Create.Namespace, p.Create.Name)
		case err != nil:
			c.cfg.Recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
			createErr = fmt.Errorf("create job %s/%s: %w", p.Create.Namespace, p.Create.Name, err)
		default:
			c.cfg.Recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
			p.Created(created)
		}
	}
	if !equality.Semantic.DeepEqual(p.Status, cj.Status) {
		upd := cj.DeepCopy()
		upd.Status = p.Status
		if _, err := c.cfg.CronJobs.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, fmt.Errorf("update cronjob %s status: %w", key, err)
		}
	}
	if createErr != nil {
		return reconcile.Result{}, createErr
	}
	return reconcile.Result{RequeueAfter: p.RequeueAfter}, nil
}

// owned is the Jobs cj controls: those in the cache, and the active ones the cache has not
// seen yet (just created) but the API has.
func (c *Controller) owned(ctx context.Context, cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	all, err := c.jobs.ListNamespace(cj.Namespace, labels.Everything())
	if err != nil {
		return nil, err
	}
	var jobs []*batchv1.Job
	for _, j := range all {
		if uid, ok := ownerUID(j); ok && uid == cj.UID {
			jobs = append(jobs, j)
		}
	}
	for _, ref := range cj.Status.Active {
		if byUID(jobs, ref.UID) != nil {
			continue
		}
		j, err := c.cfg.Jobs.Get(ctx, cj.Namespace, ref.Name, metav1.GetOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get job %s/%s: %w", cj.Namespace, ref.Name, err)
		}
		if j.UID == ref.UID {
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}
