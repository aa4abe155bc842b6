package rootcacert

import (
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/controller/internal/setup"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/run"
)

// Setup builds the controller from the controller-manager's configuration and parts; the CA
// is the one its kubeconfig trusts.
func Setup(c *setup.Context) run.Runnable {
	var ca []byte
	if c.ClientConfig != nil {
		ca = c.ClientConfig.CAData
	}
	return New(Config{
		NamespaceInformer: c.Informers.For(informer.Namespaces, nil),
		ConfigMapInformer: c.Informers.For(informer.ConfigMaps, nil),
		ConfigMaps:        client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](c.Client),
		RootCA:            ca,
		Options:           reconcile.Options{Logger: c.Logger},
	})
}
