package endpoints

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/controller/internal/backends"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// Config wires a Controller.
type Config struct {
	// ServiceInformer, PodInformer and EndpointsInformer are the shared caches.
	ServiceInformer, PodInformer, EndpointsInformer *informer.Informer
	// Endpoints writes the Endpoints.
	Endpoints client.Writer[*corev1.Endpoints]
	// Options tune the loop; its Resync is how often every Service is reconciled again
	// whatever the events said.
	reconcile.Options
}

// Controller keeps one Endpoints per selecting Service. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg       Config
	services  informer.Lister[*corev1.Service]
	pods      informer.Lister[*corev1.Pod]
	endpoints informer.Lister[*corev1.Endpoints]
	written   reconcile.Written
	log       *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:       cfg,
		services:  informer.NewLister[*corev1.Service](cfg.ServiceInformer.Store()),
		pods:      informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		endpoints: informer.NewLister[*corev1.Endpoints](cfg.EndpointsInformer.Store()),
		log:       cfg.Logger.With("controller", "endpoint"),
	}
	c.Controller = reconcile.NewController("endpoint", cfg.Options).
		For(cfg.ServiceInformer).
		Watches(cfg.PodInformer, backends.Services{Lister: c.services}.PodHandler).
		// Someone else changing or deleting an Endpoints gets it put back; our own writes
		// reaching the cache end the wait for them.
		Watches(cfg.EndpointsInformer, func(q reconcile.Queue) informer.Handler {
			own := reconcile.EnqueueOwn()(q)
			return informer.HandlerFuncs{
				AddFunc: c.seen,
				UpdateFunc: func(old, obj runtime.Object) {
					c.seen(obj)
					own.OnUpdate(old, obj)
				},
				DeleteFunc: own.OnDelete,
			}
		}).
		Keys(c.keys).
		Complete(c)
	return c
}

func (c *Controller) seen(obj runtime.Object) {
	if ep, ok := obj.(*corev1.Endpoints); ok {
		c.written.Behind(backends.Key(ep.Namespace, ep.Name), ep.ResourceVersion, c.cfg.Clock.Now())
	}
}

// keys are every Service, and every Endpoints we manage (whose Service may be gone).
func (c *Controller) keys() []string {
	keys := backends.Services{Lister: c.services}.Keys()
	eps, _ := c.endpoints.List(labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy}))
	for _, e := range eps {
		keys = append(keys, backends.Key(e.Namespace, e.Name))
	}
	return keys
}

// Reconcile makes the Endpoints of the Service key list its pods.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	current, err := c.endpoints.Get(ns, name)
	if err != nil {
		current = nil
	}
	svc, err := c.services.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		// The Service is gone: so are the Endpoints we made for it.
		if current == nil || current.Labels[LabelManagedBy] != ManagedBy {
			return reconcile.Result{}, nil
		}
		del := metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(current.UID))}
		if err := c.cfg.Endpoints.Delete(ctx, ns, name, del); err != nil && !gone(err) {
			return reconcile.Result{}, fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		c.log.Debug("deleted endpoints of a deleted service", "key", key)
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if !backends.Selects(svc) {
		return reconcile.Result{}, nil // a user's Endpoints, or none
	}
	cachedRV := ""
	if current != nil {
		cachedRV = current.ResourceVersion
	}
	if c.written.Behind(key, cachedRV, c.cfg.Clock.Now()) {
		// Our last write is not in the cache yet: a write from the older object would only
		// conflict.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	pods, err := c.pods.ListNamespace(ns, labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return reconcile.Result{}, err
	}
	desired := Desired(svc, pods)
	if current == nil {
		out, err := c.cfg.Endpoints.Create(ctx, desired, metav1.CreateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("create endpoints %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
		c.log.Debug("created endpoints", "key", key)
		return reconcile.Result{}, nil
	}
	next := Update(current, desired)
	if next == nil {
		return reconcile.Result{}, nil
	}
	// The resourceVersion read from the cache guards the write: a Conflict means the cache
	// is behind, and the requeue reconciles from the newer object.
	out, err := c.cfg.Endpoints.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("update endpoints %s: %w", key, err)
	}
	c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
	c.log.Debug("updated endpoints", "key", key)
	return reconcile.Result{}, nil
}

func gone(err error) bool {
	return errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrConflict)
}
