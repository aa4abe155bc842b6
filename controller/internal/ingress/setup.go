package ingress

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts.
func Setup(c *setup.Context) run.Runnable {
	return New(Config{
		IngressInformer:      c.Informers.Ingresses(),
		IngressClassInformer: c.Informers.For(informer.IngressClasses, nil),
		ServiceInformer:      c.Informers.Services(),
		PodInformer:          c.Informers.Pods(),
		Namespaces:           client.MustFor[*corev1.Namespace, *corev1.NamespaceList](c.Client),
		Services:             client.MustFor[*corev1.Service, *corev1.ServiceList](c.Client),
		Pods:                 client.MustFor[*corev1.Pod, *corev1.PodList](c.Client),
		ConfigMaps:           client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](c.Client),
		Ingresses:            client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](c.Client),
		IngressClasses:       client.MustFor[*networkingv1.IngressClass, *networkingv1.IngressClassList](c.Client),
		Deliverer:            ExecDeliverer{Config: RESTConfig(c.ClientConfig)},
		Recorder:             c.Recorder,
		Class:                c.Config.IngressClass,
		Namespace:            c.Config.IngressNamespace,
		Image:                c.Config.IngressNginxImage,
		Replicas:             c.Config.IngressNginxReplicas,
		NodePort:             int32(c.Config.IngressNodePort),
		Logger:               c.Logger,
	})
}
