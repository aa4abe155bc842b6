package disruption

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/record"
)

// Name is the controller's name in --controllers, as in Kubernetes.
const Name = "disruption"

// Resource is the plural its informer caches.
const Resource = "poddisruptionbudgets"

var (
	replicaSetKind            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	deploymentKind            = appsv1.SchemeGroupVersion.WithKind("Deployment")
	statefulSetKind           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	replicationControllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")
)

// Config wires a Controller.
type Config struct {
	PDBInformer, PodInformer                           *informer.Informer
	ReplicaSetInformer, DeploymentInformer             *informer.Informer
	StatefulSetInformer, ReplicationControllerInformer *informer.Informer
	PDBs                                               client.Writer[*policyv1.PodDisruptionBudget]
	Recorder                                           record.EventRecorder
	reconcile.Options
}

// Controller keeps PodDisruptionBudgets' status. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg         Config
	pdbs        informer.Lister[*policyv1.PodDisruptionBudget]
	pods        informer.Lister[*corev1.Pod]
	replicaSets informer.Lister[*appsv1.ReplicaSet]
	deployments informer.Lister[*appsv1.Deployment]
	sets        informer.Lister[*appsv1.StatefulSet]
	rcs         informer.Lister[*corev1.ReplicationController]
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	c := &Controller{
		cfg:         cfg,
		pdbs:        informer.NewLister[*policyv1.PodDisruptionBudget](cfg.PDBInformer.Store()),
		pods:        informer.NewLister[*corev1.Pod](cfg.PodInformer.Store()),
		replicaSets: informer.NewLister[*appsv1.ReplicaSet](cfg.ReplicaSetInformer.Store()),
		deployments: informer.NewLister[*appsv1.Deployment](cfg.DeploymentInformer.Store()),
		sets:        informer.NewLister[*appsv1.StatefulSet](cfg.StatefulSetInformer.Store()),
		rcs:         informer.NewLister[*corev1.ReplicationController](cfg.ReplicationControllerInformer.Store()),
	}
	c.Controller = reconcile.NewController(Name, cfg.Options).
		For(cfg.PDBInformer).
		Map(cfg.PodInformer, c.budgetsOf).
		Map(cfg.ReplicaSetInformer, c.budgetsInNamespace).
		Map(cfg.DeploymentInformer, c.budgetsInNamespace).
		Map(cfg.StatefulSetInformer, c.budgetsInNamespace).
		Map(cfg.ReplicationControllerInformer, c.budgetsInNamespace).
		Complete(c)
	return c
}

// budgetsOf is the keys of the budgets selecting a pod.
func (c *Controller) budgetsOf(obj runtime.Object) []string {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil
	}
	pdbs, _ := c.pdbs.ListNamespace(pod.Namespace, labels.Everything())
	var keys []string
	for _, pdb := range pdbs {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && sel.Matches(labels.Set(pod.Labels)) {
			keys = append(keys, pdb.Namespace+"/"+pdb.Name)
		}
	}
	return keys
}

// budgetsInNamespace is every budget of a controller's namespace: its replicas may be what a
// budget expects.
func (c *Controller) budgetsInNamespace(obj runtime.Object) []string {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil
	}
	pdbs, _ := c.pdbs.ListNamespace(m.GetNamespace(), labels.Everything())
	keys := make([]string, 0, len(pdbs))
	for _, pdb := range pdbs {
		keys = append(keys, pdb.Namespace+"/"+pdb.Name)
	}
	return keys
}

// Reconcile writes the status of the budget of key.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	pdb, err := c.pdbs.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	// In policy/v1 an empty selector selects every pod of the namespace.
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if pdb.Spec.Selector == nil || err != nil {
		sel = labels.Nothing()
	}
	pods, err := c.pods.ListNamespace(ns, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	expected := c.expected(pods)
	if expected.Err != nil {
		c.cfg.Recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", expected.Err)
	}
	now := c.cfg.Clock.Now()
	st, recheck := Status(pdb, pods, expected, now)
	if !equality.Semantic.DeepEqual(st, pdb.Status) {
		upd := pdb.DeepCopy()
		upd.Status = st
		if _, err := c.cfg.PDBs.UpdateStatus(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return reconcile.Result{}, fmt.Errorf("update poddisruptionbudget %s status: %w", key, err)
		}
	}
	if !recheck.IsZero() {
		return reconcile.Result{RequeueAfter: recheck.Sub(now)}, nil
	}
	return reconcile.Result{}, nil
}

// expected sums the replicas of the pods' controllers, each counted once, as Kubernetes reads
// their scale: a Deployment's for the pods of its ReplicaSets, a ReplicaSet's, a StatefulSet's
// or a ReplicationController's otherwise. A pod with none of these fails the count.
func (c *Controller) expected(pods []*corev1.Pod) Expected {
	seen := map[types.UID]bool{}
	var count int32
	for _, pod := range pods {
		uid, replicas, ok := c.scaleOf(pod)
		if !ok {
			return Expected{Err: fmt.Errorf("found no controllers for pod %q", pod.Name)}
		}
		if seen[uid] {
			continue
		}
		seen[uid] = true
		if replicas != nil {
			count += *replicas
		} else {
			count++
		}
	}
	return Expected{Count: count}
}

// scaleOf finds the controller whose scale covers pod: its uid and spec.replicas.
func (c *Controller) scaleOf(pod *corev1.Pod) (types.UID, *int32, bool) {
	if ref := reconcile.ControllerOf(pod, replicaSetKind); ref != nil {
		rs, err := c.replicaSets.Get(pod.Namespace, ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", nil, false
		}
		if dref := reconcile.ControllerOf(rs, deploymentKind); dref != nil {
			if d, err := c.deployments.Get(pod.Namespace, dref.Name); err == nil && d.UID == dref.UID {
				return d.UID, d.Spec.Replicas, true
			}
		}
		return rs.UID, rs.Spec.Replicas, true
	}
	if ref := reconcile.ControllerOf(pod, statefulSetKind); ref != nil {
		set, err := c.sets.Get(pod.Namespace, ref.Name)
		if err != nil || set.UID != ref.UID {
			return "", nil, false
		}
		return set.UID, set.Spec.Replicas, true
	}
	if ref := reconcile.ControllerOf(pod, replicationControllerKind); ref != nil {
		rc, err := c.rcs.Get(pod.Namespace, ref.Name)
		if err != nil || rc.UID != ref.UID {
			return "", nil, false
		}
		return rc.UID, rc.Spec.Replicas, true
	}
	return "", nil, false
}
