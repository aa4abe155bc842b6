package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"minik8s.io/controller/internal/discovery"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"minik8s.io/shared/apierror"
	metricsv1beta1 "minik8s.io/shared/apis/metrics/v1beta1"
	"minik8s.io/shared/client"
	"minik8s.io/shared/record"
	"minik8s.io/shared/scheme"
)

// Scales reads and writes the scale subresource of the object a scale target reference names.
// It is not a client.Writer: the target may be of any kind that serves the subresource (a
// Deployment or a ReplicaSet), known only from the HPA's spec.
type Scales interface {
	GetScale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, error)
	UpdateScale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, scale *autoscalingv1.Scale) (*autoscalingv1.Scale, error)
}

// Metrics reads pods' resource usage.
type Metrics interface {
	// PodMetrics returns the usage of resource, summed over each pod's containers, of the
	// pods selector picks in namespace.
	PodMetrics(ctx context.Context, namespace string, selector labels.Selector, resource corev1.ResourceName) (PodMetrics, error)
}

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// ClientScales is Scales through the apiserver. Targets of kinds the static scheme does not
// know (custom resources with a scale subresource) are found through discovery.
func ClientScales(c *client.Client) Scales {
	return clientScales{c: c, kinds: discovery.New(c, nil)}
}

type clientScales struct {
	c     *client.Client
	kinds *discovery.Cache
}

// scaled resolves a scale target to its resource, which must serve the scale subresource.
func (a clientScales) scaled(ctx context.Context, ref autoscalingv2.CrossVersionObjectReference) (*scheme.Resource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("invalid API version in scale target reference: %w", err)
	}
	var found *scheme.Resource
	for _, r := range scheme.Resources {
		if r.GVK.Group == gv.Group && r.GVK.Kind == ref.Kind {
			found = r
			break
		}
	}
	if found == nil && a.kinds != nil {
		r, err := a.kinds.Resource(ctx, gv, ref.Kind)
		if err != nil && !errors.Is(err, discovery.ErrNotServed) {
			return nil, err
		}
		found = r
	}
	if found == nil {
		return nil, apierror.New(apierror.ErrNotFound, "unable to determine resource for scale target reference: no matches for kind %q in group %q", ref.Kind, gv.Group)
	}
	if !found.HasSubresource("scale") {
		return nil, apierror.New(apierror.ErrBadRequest, "%s %s does not have a scale subresource", ref.Kind, ref.Name)
	}
	return found, nil
}

func (a clientScales) GetScale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, error) {
	res, err := a.scaled(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out autoscalingv1.Scale
	if err := a.c.Get().Resource(res, namespace, ref.Name, "scale").Into(ctx, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (a clientScales) UpdateScale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, scale *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
	res, err := a.scaled(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out autoscalingv1.Scale
	if err := a.c.Put().Resource(res, namespace, ref.Name, "scale").Body(scale).Into(ctx, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClientMetrics is Metrics through the apiserver's metrics.k8s.io.
func ClientMetrics(c *client.Client) Metrics { return clientMetrics{c: c} }

type clientMetrics struct{ c *client.Client }

func (m clientMetrics) PodMetrics(ctx context.Context, namespace string, selector labels.Selector, res corev1.ResourceName) (PodMetrics, error) {
	var list metricsv1beta1.PodMetricsList
	err := m.c.Get().AbsPath("/apis/"+metricsv1beta1.SchemeGroupVersion.String()+"/namespaces/"+namespace+"/pods").
		Param("labelSelector", selector.String()).Into(ctx, &list)
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no metrics returned from resource metrics API")
	}
	return Sum(&list, res), nil
}

// Sum is each pod's usage of res, summed over its containers in milli-units; a pod with a
// container that lacks it is left out, as Kubernetes' metrics client does.
func Sum(list *metricsv1beta1.PodMetricsList, res corev1.ResourceName) PodMetrics {
	out := PodMetrics{}
	for _, pm := range list.Items {
		var sum int64
		complete := len(pm.Containers) > 0
		for _, c := range pm.Containers {
			q, ok := c.Usage[res]
			if !ok {
				complete = false
				break
			}
			sum += q.MilliValue()
		}
		if complete {
			out[pm.Name] = PodMetric{Timestamp: pm.Timestamp.Time, Window: pm.Window.Duration, Value: sum}
		}
	}
	return out
}
