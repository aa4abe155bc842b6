package ingress

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// Defaults of Config, and the names of what the controller runs.
const (
	DefaultNamespace = "minik8s-ingress"
	DefaultService   = "ingress-nginx"
	DefaultImage     = "minik8s/nginx:1.0"
	DefaultClass     = "nginx"
	// Container is the nginx container's name in the pods.
	Container = "nginx"
	// ConfigMapKey holds the rendered configuration in the record ConfigMap.
	ConfigMapKey = "nginx.conf"
	// LabelName and LabelManagedBy select the nginx pods.
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "minik8s-ingress-controller"

	EventSync = "Sync"
	// syncKey is the one key of the work queue: the configuration is one for all Ingresses.
	syncKey = "ingress"
)

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Config wires a Controller.
type Config struct {
	// IngressInformer, IngressClassInformer, ServiceInformer and PodInformer are the shared
	// caches.
	IngressInformer, IngressClassInformer, ServiceInformer, PodInformer *informer.Informer
	// Namespaces, Services, Pods and ConfigMaps write nginx's namespace, Service, pods and
	// recorded configuration; Ingresses the Ingresses' status.
	Namespaces client.Writer[*corev1.Namespace]
	Services   client.Writer[*corev1.Service]
	Pods       client.Writer[*corev1.Pod]
	ConfigMaps client.Writer[*corev1.ConfigMap]
	Ingresses  client.Writer[*networkingv1.Ingress]
	// IngressClasses makes the controller's IngressClass at start.
	IngressClasses client.Writer[*networkingv1.IngressClass]
	Deliverer      Deliverer
	Recorder       Recorder
	// Class is the IngressClass served (see Serves), made at start when missing.
	Class string
	// Namespace, Service and Image are where the nginx pods run, the Service in front of them
	// and their image; Replicas how many run; NodePort the Service's node port (0: allocated).
	Namespace, Service, Image string
	Replicas                  int
	NodePort                  int32
	Resync                    time.Duration
	Clock                     clock.Clock
	Logger                    *slog.Logger
}

// Controller is the Ingress controller. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg       Config
	ingresses informer.Lister[*networkingv1.Ingress]
	classes   informer.Lister[*networkingv1.IngressClass]
	services  informer.Lister[*corev1.Service]
	pods      informer.Lister[*corev1.Pod]
	log       *slog.Logger

	// Used by the one worker only.
	nsReady  bool
	recorded string            // hash of the configuration last recorded in the ConfigMap
	reported map[string]string // Ingress key -> problems last reported as events
	// created are pods created and not yet seen in the cache, with when; deleted likewise.
	created, deleted map[string]time.Time
	// statuses are the Ingress status writes not yet in the cache.
	statuses reconcile.Written
}

// New returns a controller with its handlers registered; nothing runs until Start.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Class == "" {
		cfg.Class = DefaultClass
	}
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Service == "" {
		cfg.Service = DefaultService
	}
	if cfg.Image == "" {
		cfg.Image = DefaultImage
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	c := &Controller{
		cfg:       cfg,
		ingresses: informer.NewLister[*networkingv1.Ingress](cfg.IngressInformer.Store()),
		classes:   informer.NewLister[*networkingv1.IngressClass](cfg.IngressClassInformer.Store()),
		services:  informer.NewLister[*corev1.Service](cfg.ServiceInformer.Store()),
		pods:      informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		log:       cfg.Logger.With("controller", "ingress"),
		reported:  map[string]string{},
		created:   map[string]time.Time{},
		deleted:   map[string]time.Time{},
	}
	one := func() []string { return []string{syncKey} }
	everyChange := func(runtime.Object) []string { return one() }
	ours := func(obj runtime.Object) []string {
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == cfg.Namespace && p.Labels[LabelManagedBy] == ManagedBy {
			return one()
		}
		return nil
	}
	// One worker: the configuration is one, and deliveries to a pod must not overlap.
	opts := reconcile.Options{Workers: 1, Resync: cfg.Resync, Clock: cfg.Clock, Logger: cfg.Logger}
	c.Controller = reconcile.NewController("ingress", opts).
		Map(cfg.IngressInformer, everyChange).
		Watches(cfg.IngressInformer, func(reconcile.Queue) informer.Handler {
			return informer.HandlerFuncs{AddFunc: c.seen, UpdateFunc: func(_, obj runtime.Object) { c.seen(obj) }}
		}).
		Map(cfg.IngressClassInformer, everyChange).
		Map(cfg.ServiceInformer, everyChange).
		Map(cfg.PodInformer, ours).
		Keys(one).
		Complete(c)
	return c
}

// Start makes the controller's IngressClass when it is missing, then reconciles until ctx
// ends.
func (c *Controller) Start(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.cfg.IngressClassInformer.HasSynced) {
		return nil
	}
	c.ensureClass(ctx)
	return c.Controller.Start(ctx)
}

func (c *Controller) ensureClass(ctx context.Context) {
	existing, _ := c.classes.List(nil)
	ic := ClassToMake(c.cfg.Class, existing)
	if ic == nil {
		if cur, err := c.classes.Get("", c.cfg.Class); err == nil && cur.Spec.Controller != ControllerName {
			c.log.Warn("the ingress class belongs to another controller: Ingresses naming it are not served",
				"class", c.cfg.Class, "controller", cur.Spec.Controller)
		}
		return
	}
	if _, err := c.cfg.IngressClasses.Create(ctx, ic, metav1.CreateOptions{}); err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
		// Not fatal: Ingresses naming the class by annotation are still served, and the next
		// start tries again.
		c.log.Warn("could not create the ingress class", "class", ic.Name, "err", err)
		return
	}
	c.log.Info("created the ingress class", "class", ic.Name, "controller", ic.Spec.Controller, "default", IsDefault(ic))
}

func (c *Controller) seen(obj runtime.Object) {
	if ing, ok := obj.(*networkingv1.Ingress); ok {
		c.statuses.Behind(key(ing), ing.ResourceVersion, c.cfg.Clock.Now())
	}
}

func (c *Controller) podLabels() map[string]string {
	return map[string]string{LabelName: c.cfg.Service, LabelManagedBy: ManagedBy}
}

// Reconcile makes everything match the Ingresses: the nginx Service and pods, the rendered
// configuration in every running nginx, each Ingress's status and its Warning events. Its one
// key is the configuration's.
func (c *Controller) Reconcile(ctx context.Context, _ string) (reconcile.Result, error) {
	all, err := c.ingresses.List(nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	classList, err := c.classes.List(nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	classes := make(map[string]*networkingv1.IngressClass, len(classList))
	for _, ic := range classList {
		classes[ic.Name] = ic
	}
	var ings []*networkingv1.Ingress
	for _, ing := range all {
		if Serves(ing, c.cfg.Class, classes) {
			ings = append(ings, ing)
		}
	}
	nginxSvc, _ := c.services.Get(c.cfg.Namespace, c.cfg.Service)
	if len(ings) == 0 && nginxSvc == nil {
		return reconcile.Result{}, nil // nothing to serve: no nginx runs before the first Ingress
	}
	var errs []error
	if nginxSvc == nil {
		if err := c.ensureService(ctx); err != nil {
			return reconcile.Result{}, err
		}
		// The Service's ClusterIP arrives with its event, which syncs again.
	}
	// No Ingress, no nginx: the Service stays (its ClusterIP is what the hosts resolve to),
	// the pods go until the next Ingress.
	replicas := c.cfg.Replicas
	if len(ings) == 0 {
		replicas = 0
	}
	if err := c.syncPods(ctx, replicas); err != nil {
		errs = append(errs, err)
	}

	cfg, problems := Resolve(ings, func(ns, name string) *corev1.Service {
		s, err := c.services.Get(ns, name)
		if err != nil {
			return nil
		}
		return s
	})
	conf := Render(cfg)
	hash := Hash(conf)
	if hash != c.recorded {
		if err := recordConfig(ctx, c.cfg.ConfigMaps, c.cfg.Namespace, c.cfg.Service, conf); err != nil {
			errs = append(errs, fmt.Errorf("record configuration: %w", err))
		} else {
			c.recorded = hash
			c.log.Info("configuration rendered", "ingresses", len(ings), "servers", len(cfg.Servers), "hash", hash)
		}
	}
	if err := c.deliver(ctx, conf, hash); err != nil {
		errs = append(errs, err)
	}
	if nginxSvc != nil {
		now := c.cfg.Clock.Now()
		for _, ing := range ings {
			next := StatusUpdate(ing, nginxSvc.Spec.ClusterIP)
			if next == nil || c.statuses.Behind(key(ing), ing.ResourceVersion, now) {
				continue // done, or our write is on its way to the cache (its event syncs again)
			}
			out, err := c.cfg.Ingresses.UpdateStatus(ctx, next, metav1.UpdateOptions{})
			if err != nil && !errors.Is(err, apierror.ErrNotFound) {
				errs = append(errs, fmt.Errorf("status of ingress %s/%s: %w", ing.Namespace, ing.Name, err))
				continue
			}
			if err == nil {
				c.statuses.Wrote(key(ing), out.ResourceVersion, now)
			}
		}
	}
	c.report(ings, problems)
	return reconcile.Result{}, errors.Join(errs...)
}

func (c *Controller) ensureService(ctx context.Context) error {
	if err := c.ensureNamespace(ctx); err != nil {
		return err
	}
	svc := &corev1.Service{}
	svc.Namespace, svc.Name, svc.Labels = c.cfg.Namespace, c.cfg.Service, c.podLabels()
	svc.Spec = corev1.ServiceSpec{
		Type:     corev1.ServiceTypeNodePort,
		Selector: map[string]string{LabelName: c.cfg.Service, LabelManagedBy: ManagedBy},
		Ports: []corev1.ServicePort{{Name: "http", Port: HTTPPort, Protocol: corev1.ProtocolTCP,
			TargetPort: intstr.FromString("http"), NodePort: c.cfg.NodePort}},
	}
	if _, err := c.cfg.Services.Create(ctx, svc, metav1.CreateOptions{}); err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
		return fmt.Errorf("create service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	c.log.Info("created the nginx service", "service", svc.Namespace+"/"+svc.Name)
	return nil
}

// managedPods are the nginx pods in the cache, less those deleted and not yet seen so, with
// the count of those created and not yet seen.
func (c *Controller) managedPods() ([]*corev1.Pod, int) {
	cached, _ := c.pods.ListNamespace(c.cfg.Namespace, labels.SelectorFromSet(c.podLabels()))
	now := c.cfg.Clock.Now()
	seen := map[string]bool{}
	var pods []*corev1.Pod
	for _, p := range cached {
		seen[p.Name] = true
		delete(c.created, p.Name)
		if _, ok := c.deleted[p.Name]; ok && p.DeletionTimestamp == nil {
			continue // our delete is not in the cache yet
		}
		delete(c.deleted, p.Name)
		pods = append(pods, p)
	}
	for name, at := range c.deleted {
		if !seen[name] || now.Sub(at) > time.Minute {
			delete(c.deleted, name)
		}
	}
	for name, at := range c.created {
		if now.Sub(at) > time.Minute {
			delete(c.created, name) // its event was lost; the relist brings it
		}
	}
	return pods, len(c.created)
}

// ensureNamespace makes nginx's namespace unless it exists, once.
func (c *Controller) ensureNamespace(ctx context.Context) error {
	if c.nsReady {
		return nil
	}
	w, name := c.cfg.Namespaces, c.cfg.Namespace
	_, err := w.Get(ctx, "", name, metav1.GetOptions{})
	if errors.Is(err, apierror.ErrNotFound) {
		_, err = w.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if errors.Is(err, apierror.ErrAlreadyExists) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("namespace %s: %w", name, err)
	}
	c.nsReady = true
	return nil
}

func (c *Controller) syncPods(ctx context.Context, replicas int) error {
	if err := c.ensureNamespace(ctx); err != nil {
		return err
	}
	pods, pending := c.managedPods()
	plan := PlanPods(pods, pending, replicas)
	var errs []error
	now := c.cfg.Clock.Now()
	for range plan.Create {
		p, err := c.cfg.Pods.Create(ctx, c.podSpec(), metav1.CreateOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("create nginx pod: %w", err))
			continue
		}
		c.created[p.Name] = now
		c.log.Info("created nginx pod", "pod", p.Namespace+"/"+p.Name)
	}
	for _, p := range plan.Delete {
		del := metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(p.UID))}
		if err := c.cfg.Pods.Delete(ctx, p.Namespace, p.Name, del); err != nil && !errors.Is(err, apierror.ErrNotFound) && !errors.Is(err, apierror.ErrConflict) {
			errs = append(errs, fmt.Errorf("delete nginx pod %s: %w", p.Name, err))
			continue
		}
		c.deleted[p.Name] = now
		c.log.Info("deleted nginx pod", "pod", p.Namespace+"/"+p.Name, "phase", p.Status.Phase)
	}
	return errors.Join(errs...)
}

func (c *Controller) podSpec() *corev1.Pod {
	p := &corev1.Pod{}
	p.Namespace, p.GenerateName, p.Labels = c.cfg.Namespace, c.cfg.Service+"-", c.podLabels()
	grace := int64(30)
	p.Spec = corev1.PodSpec{
		TerminationGracePeriodSeconds: &grace,
		Containers: []corev1.Container{{
			Name:            Container,
			Image:           c.cfg.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: HTTPPort, Protocol: corev1.ProtocolTCP},
				{Name: "health", ContainerPort: HealthPort, Protocol: corev1.ProtocolTCP},
			},
			// Ready once a rendered configuration runs: only then does the Service send it
			// traffic.
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(HealthPort)}},
				PeriodSeconds: 2, FailureThreshold: 1, TimeoutSeconds: 2,
			},
		}},
	}
	return p
}

// deliver sends the configuration to every running nginx that does not run it yet, at once
// (a pod on an unreachable node costs its own timeout, not the others' delivery), and records
// on each pod what it runs.
func (c *Controller) deliver(ctx context.Context, conf []byte, hash string) error {
	pods, _ := c.pods.ListNamespace(c.cfg.Namespace, labels.SelectorFromSet(c.podLabels()))
	todo := PlanDeliveries(pods, Container, hash)
	if len(todo) == 0 {
		return nil
	}
	if c.cfg.Deliverer == nil {
		return errNoDeliverer
	}
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, d := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.cfg.Deliverer.Deliver(ctx, d.Pod, Container, conf); err != nil {
				errs[i] = err
				return
			}
			if err := annotatePod(ctx, c.cfg.Pods, d.Pod, ConfigAnnotation, hash+" "+d.ContainerID); err != nil && !errors.Is(err, apierror.ErrNotFound) {
				errs[i] = fmt.Errorf("annotate nginx pod %s: %w", d.Pod.Name, err)
				return
			}
			c.log.Info("configuration delivered and reloaded", "pod", d.Pod.Namespace+"/"+d.Pod.Name, "hash", hash)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// report sends each Ingress's problems as Warning events when they differ from what was last
// reported for it (the same problems every resync would only bump the events' counts).
func (c *Controller) report(ings []*networkingv1.Ingress, problems []Problem) {
	by := map[string][]Problem{}
	for _, p := range problems {
		by[p.Ingress] = append(by[p.Ingress], p)
	}
	live := map[string]bool{}
	for _, ing := range ings {
		k := key(ing)
		live[k] = true
		var sig strings.Builder
		fmt.Fprintf(&sig, "%s/%d;", ing.UID, ing.Generation)
		for _, p := range by[k] {
			sig.WriteString(p.Reason + ":" + p.Message + ";")
		}
		if c.reported[k] == sig.String() {
			continue
		}
		c.reported[k] = sig.String()
		for _, p := range by[k] {
			c.cfg.Recorder.Eventf(ing, corev1.EventTypeWarning, p.Reason, "%s", p.Message)
		}
		if len(by[k]) == 0 {
			c.cfg.Recorder.Eventf(ing, corev1.EventTypeNormal, EventSync, "Scheduled for sync")
		}
	}
	for _, k := range slices.Collect(maps.Keys(c.reported)) {
		if !live[k] {
			delete(c.reported, k)
		}
	}
}
