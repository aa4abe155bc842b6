package controller

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	demov1 "minik8s.io/test/operator/api/v1"
)

// Reconciler makes each EchoApp's Deployment and Service match it and reports their state in
// its status.
type Reconciler struct {
	Client   client.Client
	Recorder recorder.EventRecorder
	// Now stamps conditions; tests pin it.
	Now func() metav1.Time
}

// SetupWithManager registers the reconciler: EchoApps, and the Deployments and Services they
// control, so that a change to either (a drift, pods becoming ready) reconciles the owner.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1.EchoApp{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Named("echoapp").
		Complete(r)
}

// Reconcile brings one EchoApp's children and status up to date. An error requeues the key
// with backoff (a Conflict on status included: the next try reads the newer object).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var app demov1.EchoApp
	if err := r.Client.Get(ctx, req.NamespacedName, &app); err != nil {
		// Gone: garbage collection removes what it owned.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !app.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	// Both children are synced whatever happens to the other, so one's trouble does not
	// hold back the other.
	d, derr := r.syncDeployment(ctx, &app)
	serr := r.syncService(ctx, &app)
	if err := errors.Join(withoutCacheBehind(derr), withoutCacheBehind(serr)); err != nil {
		return ctrl.Result{}, err
	}
	if derr != nil || serr != nil {
		// Created earlier but not in the cache yet: its add event reconciles again.
		logger.V(1).Info("waiting for the cache", "err", errors.Join(derr, serr))
		return ctrl.Result{}, nil
	}
	st := ComputeStatus(&app, d, r.now())
	if apiequality.Semantic.DeepEqual(st, app.Status) {
		return ctrl.Result{}, nil
	}
	app.Status = st
	// Update, not patch: it carries the resourceVersion read above, so a stale view is
	// refused with a Conflict rather than overwriting a newer status.
	if err := r.Client.Status().Update(ctx, &app); err != nil {
		return ctrl.Result{}, fmt.Errorf("update status of %s: %w", req.NamespacedName, err)
	}
	logger.V(1).Info("status updated", "replicas", st.Replicas, "readyReplicas", st.ReadyReplicas)
	return ctrl.Result{}, nil
}

func (r *Reconciler) now() metav1.Time {
	if r.Now != nil {
		return r.Now()
	}
	return metav1.Now()
}

// errCacheBehind says a child the cache does not have exists on the server: one this
// reconciler created moments ago. Creating it again would fail the same way.
var errCacheBehind = errors.New("the cache has not seen it yet")

// syncDeployment creates app's Deployment or corrects the fields it owns, and returns it as
// stored.
func (r *Reconciler) syncDeployment(ctx context.Context, app *demov1.EchoApp) (*appsv1.Deployment, error) {
	want := DesiredDeployment(app)
	var have appsv1.Deployment
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return nil, createError("deployment", app, err)
		}
		r.event(app, corev1.EventTypeNormal, "Created", "Create", "created Deployment %s", want.Name)
		return want, nil
	case err != nil:
		return nil, fmt.Errorf("get deployment %s/%s: %w", app.Namespace, app.Name, err)
	}
	if err := checkOwner(app, &have.ObjectMeta, "Deployment"); err != nil {
		r.event(app, corev1.EventTypeWarning, "NotOwned", "Sync", "%v", err)
		return nil, err
	}
	if !FixDeployment(&have, want) {
		return &have, nil
	}
	if err := r.Client.Update(ctx, &have); err != nil {
		return nil, fmt.Errorf("update deployment %s/%s: %w", app.Namespace, app.Name, err)
	}
	r.event(app, corev1.EventTypeNormal, reasonDeploymentDrift, "Update", "updated Deployment %s to match the EchoApp", have.Name)
	return &have, nil
}

func createError(kind string, app *demov1.EchoApp, err error) error {
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s/%s: %w", kind, app.Namespace, app.Name, errCacheBehind)
	}
	return fmt.Errorf("create %s %s/%s: %w", kind, app.Namespace, app.Name, err)
}

// withoutCacheBehind is err unless it only says the cache is behind.
func withoutCacheBehind(err error) error {
	if errors.Is(err, errCacheBehind) {
		return nil
	}
	return err
}

// syncService is syncDeployment for the Service.
func (r *Reconciler) syncService(ctx context.Context, app *demov1.EchoApp) error {
	want := DesiredService(app)
	var have corev1.Service
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: app.Namespace, Name: app.Name}, &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return createError("service", app, err)
		}
		r.event(app, corev1.EventTypeNormal, "Created", "Create", "created Service %s", want.Name)
		return nil
	case err != nil:
		return fmt.Errorf("get service %s/%s: %w", app.Namespace, app.Name, err)
	}
	if err := checkOwner(app, &have.ObjectMeta, "Service"); err != nil {
		r.event(app, corev1.EventTypeWarning, "NotOwned", "Sync", "%v", err)
		return err
	}
	if !FixService(&have, want) {
		return nil
	}
	if err := r.Client.Update(ctx, &have); err != nil {
		return fmt.Errorf("update service %s/%s: %w", app.Namespace, app.Name, err)
	}
	r.event(app, corev1.EventTypeNormal, reasonServiceDrift, "Update", "updated Service %s to match the EchoApp", have.Name)
	return nil
}

// checkOwner refuses to take over an object of the same name that app does not control.
func checkOwner(app *demov1.EchoApp, m *metav1.ObjectMeta, kind string) error {
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.UID != app.UID {
		return fmt.Errorf("%s %s/%s exists and is not controlled by EchoApp %s", kind, m.Namespace, m.Name, app.Name)
	}
	return nil
}

func (r *Reconciler) event(app *demov1.EchoApp, kind, reason, action, note string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(app, nil, kind, reason, action, note, args...)
	}
}
