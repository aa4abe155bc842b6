package rootcacert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// Name is the controller's name, as Kubernetes' --controllers spells it.
const Name = "root-ca-cert-publisher"

// Config wires a Controller.
type Config struct {
	// NamespaceInformer and ConfigMapInformer are the shared caches.
	NamespaceInformer, ConfigMapInformer *informer.Informer
	// ConfigMaps writes the published ConfigMaps.
	ConfigMaps client.Writer[*corev1.ConfigMap]
	// RootCA is the PEM bundle published: the CA the controller-manager's own connection to
	// the apiserver trusts, as in Kubernetes without --root-ca-file.
	RootCA []byte
	reconcile.Options
}

// Controller publishes the root CA in every namespace. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg        Config
	namespaces informer.Lister[*corev1.Namespace]
	configMaps informer.Lister[*corev1.ConfigMap]
	log        *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:        cfg,
		namespaces: informer.NewLister[*corev1.Namespace](cfg.NamespaceInformer.Store()),
		configMaps: informer.NewLister[*corev1.ConfigMap](cfg.ConfigMapInformer.Store()),
		log:        cfg.Logger.With("controller", Name),
	}
	if len(cfg.RootCA) == 0 {
		c.log.Warn("the controller-manager's kubeconfig names no CA: kube-root-ca.crt ConfigMaps hold an empty ca.crt")
	}
	// Keys are namespaces; a change to (or the deletion of) a published ConfigMap queues its
	// namespace, to put it back.
	c.Controller = reconcile.NewController(Name, cfg.Options).
		For(cfg.NamespaceInformer).
		Map(cfg.ConfigMapInformer, func(obj runtime.Object) []string {
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
				return []string{cm.Namespace}
			}
			return nil
		}).
		Complete(c)
	return c
}

// Reconcile makes namespace key hold the published ConfigMap, as Decide says.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	_, name := informer.SplitKey(key)
	ns, err := c.namespaces.Get("", name)
	if errors.Is(err, apierror.ErrNotFound) {
		ns = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	current, err := c.configMaps.Get(name, ConfigMapName)
	if errors.Is(err, apierror.ErrNotFound) {
		current = nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	plan := Decide(ns, current, c.cfg.RootCA)
	switch {
	case plan.Create != nil:
		_, err := c.cfg.ConfigMaps.Create(ctx, plan.Create, metav1.CreateOptions{})
		// One there already (the cache is behind) comes back through the cache's event; a
		// namespace gone meanwhile needs nothing.
		if err != nil && !errors.Is(err, apierror.ErrAlreadyExists) && !errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, fmt.Errorf("create configmap %s/%s: %w", name, ConfigMapName, err)
		}
		if err == nil {
			c.log.Debug("published the root CA", "namespace", name)
		}
	case plan.Update != nil:
		// The resourceVersion read from the cache guards the write: a Conflict means the
		// cache is behind, and the requeue decides again from the newer ConfigMap.
		_, err := c.cfg.ConfigMaps.Update(ctx, plan.Update, metav1.UpdateOptions{})
		if err != nil && !errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, fmt.Errorf("update configmap %s/%s: %w", name, ConfigMapName, err)
		}
		if err == nil {
			c.log.Debug("reset the published root CA", "namespace", name)
		}
	}
	return reconcile.Result{}, nil
}
