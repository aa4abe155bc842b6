package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/controller/internal/backends"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// ServiceIndex files the slices this controller manages under their Service's key.
const ServiceIndex = "endpointslice.service"

// ServiceIndexFunc is the index function of ServiceIndex.
func ServiceIndexFunc(obj runtime.Object) ([]string, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, fmt.Errorf("endpointslice index: got %T", obj)
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	if svc == "" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
		return nil, nil
	}
	return []string{backends.Key(s.Namespace, svc)}, nil
}

// Config wires a Controller.
type Config struct {
	// ServiceInformer, PodInformer, NodeInformer and SliceInformer are the shared caches;
	// SliceInformer must have ServiceIndex.
	ServiceInformer, PodInformer, NodeInformer, SliceInformer *informer.Informer
	// Slices writes the EndpointSlices, of at most MaxEndpointsPerSlice endpoints.
	Slices               client.Writer[*discoveryv1.EndpointSlice]
	MaxEndpointsPerSlice int
	reconcile.Options
}

// Controller keeps the EndpointSlices of every selecting Service. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg      Config
	services informer.Lister[*corev1.Service]
	pods     informer.Lister[*corev1.Pod]
	nodes    informer.Lister[*corev1.Node]
	slices   informer.Lister[*discoveryv1.EndpointSlice]
	tracker  *tracker
	log      *slog.Logger
}

// New returns a controller with its handlers registered; nothing runs until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:      cfg,
		services: informer.NewLister[*corev1.Service](cfg.ServiceInformer.Store()),
		pods:     informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		nodes:    informer.NewLister[*corev1.Node](cfg.NodeInformer.Store()),
		slices:   informer.NewLister[*discoveryv1.EndpointSlice](cfg.SliceInformer.Store()),
		tracker:  newTracker(30 * time.Second),
		log:      cfg.Logger.With("controller", "endpointslice"),
	}
	c.Controller = reconcile.NewController("endpointslice", cfg.Options).
		For(cfg.ServiceInformer).
		Watches(cfg.PodInformer, backends.Services{Lister: c.services}.PodHandler).
		Reads(cfg.NodeInformer).
		Map(cfg.SliceInformer, func(obj runtime.Object) []string {
			keys, _ := ServiceIndexFunc(obj)
			return keys
		}).
		Keys(c.keys).
		Complete(c)
	return c
}

func (c *Controller) keys() []string {
	keys := backends.Services{Lister: c.services}.Keys()
	// Slices whose Service is gone.
	all, _ := c.slices.List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelManagedBy: ManagedBy}))
	for _, s := range all {
		if k, _ := ServiceIndexFunc(s); len(k) == 1 {
			keys = append(keys, k[0])
		}
	}
	return keys
}

// Reconcile makes the EndpointSlices of the Service key list its pods.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	existing, err := c.slices.ByIndex(ServiceIndex, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if c.tracker.behind(key, existing, now) {
		// Our last writes are not in the cache yet; planning now could create twice.
		return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
	}
	var plan Plan
	svc, err := c.services.Get(ns, name)
	switch {
	case errors.Is(err, apierror.ErrNotFound):
		plan = ForDeletedService(existing)
	case err != nil:
		return reconcile.Result{}, err
	case !backends.Selects(svc):
		// Slices of a Service that stopped selecting go, as in Kubernetes; a user's
		// slices (another managed-by) are not in the index.
		plan = ForDeletedService(existing)
	default:
		pods, err := c.pods.ListNamespace(ns, labels.SelectorFromSet(svc.Spec.Selector))
		if err != nil {
			return reconcile.Result{}, err
		}
		plan = Compute(Input{Service: svc, Pods: pods, Zones: c.zones(pods), Existing: existing, MaxPerSlice: c.cfg.MaxEndpointsPerSlice})
	}
	if plan.Empty() {
		if svc == nil {
			c.tracker.forget(key)
		}
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, c.apply(ctx, key, plan)
}

func (c *Controller) zones(pods []*corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		n := p.Spec.NodeName
		if _, done := out[n]; done || n == "" {
			continue
		}
		if node, err := c.nodes.Get("", n); err == nil {
			out[n] = node.Labels[corev1.LabelTopologyZone]
		}
	}
	return out
}

// apply writes the plan: updates and creates before deletes, so that an endpoint moving
// between slices is never missing from all of them.
func (c *Controller) apply(ctx context.Context, key string, plan Plan) error {
	now := c.cfg.Clock.Now()
	var errs []error
	for _, s := range plan.Update {
		out, err := c.cfg.Slices.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("update endpointslice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		c.tracker.wrote(key, out, now)
	}
	for _, s := range plan.Create {
		out, err := c.cfg.Slices.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("create endpointslice for %s: %w", key, err))
			continue
		}
		c.tracker.wrote(key, out, now)
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // deletes wait until what replaces them is written
	}
	for _, s := range plan.Delete {
		del := metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(s.UID))}
		if err := c.cfg.Slices.Delete(ctx, s.Namespace, s.Name, del); err != nil && !errors.Is(err, apierror.ErrNotFound) && !errors.Is(err, apierror.ErrConflict) {
			errs = append(errs, fmt.Errorf("delete endpointslice %s/%s: %w", s.Namespace, s.Name, err))
			continue
		}
		c.tracker.deleted(key, s.Name, now)
	}
	c.log.Debug("endpointslices written", "key", key, "created", len(plan.Create), "updated", len(plan.Update), "deleted", len(plan.Delete))
	return errors.Join(errs...)
}
