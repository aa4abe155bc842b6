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
	"minik8s.io/shared/workqueue/clock"
)

// API is the writes the controller makes.
type API interface {
	// Create and Update return the stored object.
	Create(ctx context.Context, ep *corev1.Endpoints) (*corev1.Endpoints, error)
	Update(ctx context.Context, ep *corev1.Endpoints) (*corev1.Endpoints, error)
	Delete(ctx context.Context, ep *corev1.Endpoints) error
}

// ClientAPI writes Endpoints through the apiserver.
func ClientAPI(c *client.Client) API {
	return clientAPI{client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](c)}
}

type clientAPI struct {
	eps *client.Typed[*corev1.Endpoints, *corev1.EndpointsList]
}

func (a clientAPI) Create(ctx context.Context, ep *corev1.Endpoints) (*corev1.Endpoints, error) {
	return a.eps.Create(ctx, ep, metav1.CreateOptions{})
}

func (a clientAPI) Update(ctx context.Context, ep *corev1.Endpoints) (*corev1.Endpoints, error) {
	return a.eps.Update(ctx, ep, metav1.UpdateOptions{})
}

func (a clientAPI) Delete(ctx context.Context, ep *corev1.Endpoints) error {
	return a.eps.Delete(ctx, ep.Namespace, ep.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ep.UID}})
}

// Config wires a Controller.
type Config struct {
	// Services, Pods and Endpoints are the shared informers.
	Services, Pods, Endpoints *informer.Informer
	API                       API
	Workers                   int
	// Resync is how often every Service is reconciled again whatever the events said.
	Resync time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Controller keeps one Endpoints per selecting Service. Build with New, run Start.
type Controller struct {
	cfg       Config
	services  informer.Lister[*corev1.Service]
	pods      informer.Lister[*corev1.Pod]
	endpoints informer.Lister[*corev1.Endpoints]
	loop      *reconcile.Loop
	written   reconcile.Written
	log       *slog.Logger
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
		cfg:       cfg,
		services:  informer.NewLister[*corev1.Service](cfg.Services.Store()),
		pods:      informer.NewLister[*corev1.Pod](cfg.Pods.Store()),
		endpoints: informer.NewLister[*corev1.Endpoints](cfg.Endpoints.Store()),
		log:       cfg.Logger.With("controller", "endpoint"),
	}
	c.loop = reconcile.New("endpoint", cfg.Clock)
	c.loop.Sync, c.loop.Keys, c.loop.Logger = c.sync, c.keys, cfg.Logger
	c.loop.Synced = []func() bool{cfg.Services.HasSynced, cfg.Pods.HasSynced, cfg.Endpoints.HasSynced}
	c.loop.Tune(cfg.Workers, cfg.Resync)
	cfg.Services.AddEventHandler(backends.ServiceHandler(c.loop.Add))
	cfg.Pods.AddEventHandler(backends.Services{Lister: c.services}.PodHandler(c.loop.Add))
	// Someone else changing or deleting an Endpoints gets it put back; our own writes
	// reaching the cache end the wait for them.
	cfg.Endpoints.AddEventHandler(informer.HandlerFuncs{
		AddFunc: c.seen,
		UpdateFunc: func(_, obj runtime.Object) {
			c.seen(obj)
			c.enqueueOwn(obj)
		},
		DeleteFunc: c.enqueueOwn,
	})
	return c
}

func (c *Controller) seen(obj runtime.Object) {
	if ep, ok := obj.(*corev1.Endpoints); ok {
		c.written.Behind(backends.Key(ep.Namespace, ep.Name), ep.ResourceVersion, c.cfg.Clock.Now())
	}
}

func (c *Controller) enqueueOwn(obj runtime.Object) {
	if key, err := informer.KeyOf(obj); err == nil {
		c.loop.Add(key)
	}
}

// Start reconciles until ctx ends.
func (c *Controller) Start(ctx context.Context) error { return c.loop.Run(ctx) }

// keys are every Service, and every Endpoints we manage (whose Service may be gone).
func (c *Controller) keys() []string {
	var keys []string
	svcs, _ := c.services.List(nil)
	for _, s := range svcs {
		keys = append(keys, backends.Key(s.Namespace, s.Name))
	}
	eps, _ := c.endpoints.List(labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy}))
	for _, e := range eps {
		keys = append(keys, backends.Key(e.Namespace, e.Name))
	}
	return keys
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name := informer.SplitKey(key)
	current, err := c.endpoints.Get(ns, name)
	if err != nil {
		current = nil
	}
	svc, err := c.services.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		// The Service is gone: so are the Endpoints we made for it.
		if current == nil || current.Labels[LabelManagedBy] != ManagedBy {
			return nil
		}
		if err := c.cfg.API.Delete(ctx, current); err != nil && !gone(err) {
			return fmt.Errorf("delete endpoints %s: %w", key, err)
		}
		c.log.Debug("deleted endpoints of a deleted service", "key", key)
		return nil
	} else if err != nil {
		return err
	}
	if !backends.Selects(svc) {
		return nil // a user's Endpoints, or none
	}
	cachedRV := ""
	if current != nil {
		cachedRV = current.ResourceVersion
	}
	if c.written.Behind(key, cachedRV, c.cfg.Clock.Now()) {
		// Our last write is not in the cache yet: a write from the older object would only
		// conflict.
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	pods, err := c.pods.ListNamespace(ns, labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	desired := Desired(svc, pods)
	if current == nil {
		out, err := c.cfg.API.Create(ctx, desired)
		if err != nil {
			return fmt.Errorf("create endpoints %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
		c.log.Debug("created endpoints", "key", key)
		return nil
	}
	next := Update(current, desired)
	if next == nil {
		return nil
	}
	// The resourceVersion read from the cache guards the write: a Conflict means the cache
	// is behind, and the requeue reconciles from the newer object.
	out, err := c.cfg.API.Update(ctx, next)
	if err != nil {
		return fmt.Errorf("update endpoints %s: %w", key, err)
	}
	c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
	c.log.Debug("updated endpoints", "key", key)
	return nil
}

func gone(err error) bool {
	return errors.Is(err, apierror.ErrNotFound) || errors.Is(err, apierror.ErrConflict)
}
