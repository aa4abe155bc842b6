package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// DefaultSyncPeriod is how often each HPA is evaluated, Kubernetes'
// --horizontal-pod-autoscaler-sync-period.
const DefaultSyncPeriod = 15 * time.Second

// Config wires a Controller.
type Config struct {
	// HPAInformer and PodInformer are the shared caches.
	HPAInformer, PodInformer *informer.Informer
	HPAs                     client.Writer[*autoscalingv2.HorizontalPodAutoscaler]
	Scales                   Scales
	ResourceMetrics          Metrics
	Recorder                 Recorder
	// Options' Resync is how often every HPA is evaluated (DefaultSyncPeriod when zero).
	reconcile.Options
}

// Controller scales the targets of HorizontalPodAutoscalers. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg  Config
	hpas informer.Lister[*autoscalingv2.HorizontalPodAutoscaler]
	pods informer.Lister[*corev1.Pod]
	log  *slog.Logger

	mu      sync.Mutex
	history map[string]*History // by namespace/name
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultSyncPeriod
	}
	c := &Controller{
		cfg:     cfg,
		hpas:    informer.NewLister[*autoscalingv2.HorizontalPodAutoscaler](cfg.HPAInformer.Store()),
		pods:    informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		log:     cfg.Logger.With("controller", "horizontalpodautoscaling"),
		history: map[string]*History{},
	}
	c.Controller = reconcile.NewController("horizontalpodautoscaling", cfg.Options).
		Watches(cfg.HPAInformer, c.hpaEvents).
		Reads(cfg.PodInformer).
		Keys(c.keys).
		Complete(c)
	return c
}

// hpaEvents queue an HPA when it appears or its spec changes; every Resync does the rest. Its
// own status writes must not make it evaluate again at once, which would shorten the rate the
// metrics are looked at.
func (c *Controller) hpaEvents(q reconcile.Queue) informer.Handler {
	own := reconcile.EnqueueOwn()(q)
	return informer.HandlerFuncs{
		AddFunc: own.OnAdd,
		UpdateFunc: func(old, obj runtime.Object) {
			o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
			n, ok2 := obj.(*autoscalingv2.HorizontalPodAutoscaler)
			if ok1 && ok2 && o.Generation == n.Generation {
				return
			}
			own.OnUpdate(old, obj)
		},
		DeleteFunc: func(obj runtime.Object) {
			if key, err := informer.KeyOf(informer.DeletedObject(obj)); err == nil {
				c.forget(key)
			}
		},
	}
}

func (c *Controller) forget(key string) {
	c.mu.Lock()
	delete(c.history, key)
	c.mu.Unlock()
}

func (c *Controller) keys() []string {
	hpas, _ := c.hpas.List(nil)
	keys := make([]string, 0, len(hpas))
	for _, h := range hpas {
		keys = append(keys, h.Namespace+"/"+h.Name)
	}
	return keys
}

func (c *Controller) historyOf(key string) *History {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.history[key]
	if h == nil {
		h = &History{}
		c.history[key] = h
	}
	return h
}

// Reconcile evaluates the HPA of key: reads its target's scale and its pods' metrics, rescales
// the target as Decide says and writes the HPA's status. It never asks to look again sooner:
// every Resync evaluates each HPA.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	return reconcile.Result{}, c.evaluate(ctx, key)
}

func (c *Controller) evaluate(ctx context.Context, key string) error {
	namespace, name := informer.SplitKey(key)
	cached, err := c.hpas.Get(namespace, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	hpa := cached.DeepCopy()
	now := c.cfg.Clock.Now()
	ref := hpa.Spec.ScaleTargetRef
	scale, err := c.cfg.Scales.GetScale(ctx, namespace, ref)
	if err != nil {
		SetCondition(&hpa.Status, autoscalingv2.AbleToScale, corev1.ConditionFalse, ReasonFailedGetScale, "the HPA controller was unable to get the target's current scale: "+err.Error(), now)
		c.cfg.Recorder.Eventf(hpa, corev1.EventTypeWarning, ReasonFailedGetScale, "%v", err)
		if werr := c.writeStatus(ctx, cached, hpa); werr != nil {
			return werr
		}
		return fmt.Errorf("get scale of %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	in := Input{HPA: hpa, Current: scale.Spec.Replicas, Now: now,
		Metrics: map[corev1.ResourceName]PodMetrics{}, MetricErrors: map[corev1.ResourceName]error{}}
	selector, err := labels.Parse(scale.Status.Selector)
	if err == nil && selector.Empty() {
		err = fmt.Errorf("the target's selector is empty")
	}
	if err != nil {
		SetCondition(&hpa.Status, autoscalingv2.ScalingActive, corev1.ConditionFalse, ReasonInvalidSelector, "the HPA target's scale is missing a selector", now)
		c.cfg.Recorder.Eventf(hpa, corev1.EventTypeWarning, ReasonInvalidSelector, "couldn't convert selector into a corresponding internal selector object: %v", err)
		return c.writeStatus(ctx, cached, hpa)
	}
	pods, err := c.pods.ListNamespace(namespace, selector)
	if err != nil {
		return err
	}
	in.Pods = pods
	for _, m := range hpa.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			continue
		}
		if _, done := in.Metrics[m.Resource.Name]; done {
			continue
		}
		pm, err := c.cfg.ResourceMetrics.PodMetrics(ctx, namespace, selector, m.Resource.Name)
		if err != nil {
			in.MetricErrors[m.Resource.Name] = err
			continue
		}
		in.Metrics[m.Resource.Name] = pm
	}

	h := c.historyOf(key)
	d := Decide(in, h)
	hpa.Status = d.Status
	for _, w := range d.Warnings {
		c.cfg.Recorder.Eventf(hpa, corev1.EventTypeWarning, w.Reason, "%s", w.Message)
	}
	if d.Rescale {
		want := scale.DeepCopy()
		want.Spec.Replicas = d.Desired
		if _, err := c.cfg.Scales.UpdateScale(ctx, namespace, ref, want); err != nil {
			SetCondition(&hpa.Status, autoscalingv2.AbleToScale, corev1.ConditionFalse, ReasonFailedUpdateScale, "the HPA controller was unable to update the target scale: "+err.Error(), now)
			c.cfg.Recorder.Eventf(hpa, corev1.EventTypeWarning, ReasonFailedRescale, "New size: %d; reason: %s; error: %v", d.Desired, d.Reason, err)
			if werr := c.writeStatus(ctx, cached, hpa); werr != nil {
				return werr
			}
			return fmt.Errorf("rescale %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
		}
		h.Record(withDefaults(hpa.Spec.Behavior), in.Current, d.Desired, now)
		SetCondition(&hpa.Status, autoscalingv2.AbleToScale, corev1.ConditionTrue, ReasonSucceededRescale, fmt.Sprintf("the HPA controller was able to update the target scale to %d", d.Desired), now)
		c.cfg.Recorder.Eventf(hpa, corev1.EventTypeNormal, EventSuccessfulRescale, "New size: %d; reason: %s", d.Desired, d.Reason)
		c.log.Info("rescaled", "hpa", key, "target", ref.Kind+"/"+ref.Name, "from", in.Current, "to", d.Desired, "reason", d.Reason)
		t := metav1.NewTime(now)
		hpa.Status.LastScaleTime = &t
	}
	return c.writeStatus(ctx, cached, hpa)
}

// writeStatus writes hpa's status when it differs from what the cache holds; the
// resourceVersion read guards it, so a Conflict requeues.
func (c *Controller) writeStatus(ctx context.Context, cached, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if equality.Semantic.DeepEqual(cached.Status, hpa.Status) {
		return nil
	}
	if _, err := c.cfg.HPAs.UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of hpa %s/%s: %w", hpa.Namespace, hpa.Name, err)
	}
	return nil
}
