package clusterroleaggregation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// Name is the controller's name, as Kubernetes' --controllers spells it.
const Name = "clusterrole-aggregation"

// Config wires a Controller.
type Config struct {
	// ClusterRoleInformer is the shared cache of ClusterRoles.
	ClusterRoleInformer *informer.Informer
	// ClusterRoles writes the aggregated roles.
	ClusterRoles client.Writer[*rbacv1.ClusterRole]
	reconcile.Options
}

// Controller keeps the rules of aggregated ClusterRoles. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg   Config
	roles informer.Lister[*rbacv1.ClusterRole]
	log   *slog.Logger
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:   cfg,
		roles: informer.NewLister[*rbacv1.ClusterRole](cfg.ClusterRoleInformer.Store()),
		log:   cfg.Logger.With("controller", Name),
	}
	// Which aggregated roles a change reaches depends on labels before and after, and on
	// roles aggregating roles: as in Kubernetes, every change queues every aggregated role,
	// which are few.
	c.Controller = reconcile.NewController(Name, cfg.Options).
		Map(cfg.ClusterRoleInformer, func(runtime.Object) []string { return c.keys() }).
		Keys(c.keys).
		Complete(c)
	return c
}

// keys are the names of the ClusterRoles with an aggregationRule.
func (c *Controller) keys() []string {
	roles, _ := c.roles.List(nil)
	var keys []string
	for _, r := range roles {
		if r.AggregationRule != nil {
			keys = append(keys, r.Name)
		}
	}
	return keys
}

// Reconcile gives the aggregated ClusterRole key the rules of the roles it selects.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	_, name := informer.SplitKey(key)
	role, err := c.roles.Get("", name)
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if role.AggregationRule == nil {
		return reconcile.Result{}, nil
	}
	all, err := c.roles.List(nil)
	if err != nil {
		return reconcile.Result{}, err
	}
	rules, err := Rules(role, all)
	if err != nil {
		return reconcile.Result{}, err
	}
	next := Update(role, rules)
	if next == nil {
		return reconcile.Result{}, nil
	}
	// The resourceVersion read from the cache guards the write: a Conflict means the cache
	// is behind, and the requeue aggregates again from the newer role.
	if _, err := c.cfg.ClusterRoles.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
		if errors.Is(err, apierror.ErrNotFound) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("update clusterrole %s: %w", name, err)
	}
	c.log.Debug("aggregated clusterrole rules", "key", key, "rules", len(rules))
	return reconcile.Result{}, nil
}
