package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
)

// Config wires a Controller.
type Config struct {
	// VolumeInformer, ClaimInformer and ClassInformer are the shared caches.
	VolumeInformer, ClaimInformer, ClassInformer *informer.Informer
	// Volumes, Claims and Classes write them; Claims also reads claims: a volume is released
	// only when its claim is gone from the apiserver too, not merely missing from a cache that
	// has not seen it yet.
	Volumes  client.Writer[*corev1.PersistentVolume]
	Claims   client.Writer[*corev1.PersistentVolumeClaim]
	Classes  client.Writer[*storagev1.StorageClass]
	Recorder Recorder
	// Provisioner is the provisioner name whose classes we provision for (DefaultProvisioner).
	Provisioner string
	// Root is the directory provisioned volumes live under, the same path on every node.
	Root string
	// DefaultClass, when set, is the StorageClass made at start (ours, marked default) when no
	// class is marked default and none has that name.
	DefaultClass string
	// Options tune both loops, of claims and of volumes; Resync (15 s unless set) is how
	// often every claim and volume is looked at again.
	reconcile.Options
}

// Controller binds claims and volumes. Build with New, run Start.
type Controller struct {
	cfg       Config
	volumes   informer.Lister[*corev1.PersistentVolume]
	claims    informer.Lister[*corev1.PersistentVolumeClaim]
	classes   informer.Lister[*storagev1.StorageClass]
	dirs      Dirs
	claimCtl  *reconcile.Controller
	volumeCtl *reconcile.Controller
	written   reconcile.Written
	log       *slog.Logger

	mu sync.Mutex
	// reported is the last event message per object, so a resync does not repeat it.
	reported map[string]string
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	if cfg.Resync <= 0 {
		cfg.Resync = 15 * time.Second
	}
	c := &Controller{
		cfg:      cfg,
		volumes:  informer.NewLister[*corev1.PersistentVolume](cfg.VolumeInformer.Store()),
		claims:   informer.NewLister[*corev1.PersistentVolumeClaim](cfg.ClaimInformer.Store()),
		classes:  informer.NewLister[*storagev1.StorageClass](cfg.ClassInformer.Store()),
		dirs:     Dirs{Root: cfg.Root},
		log:      cfg.Logger.With("controller", "persistentvolume-binder"),
		reported: map[string]string{},
	}
	// A new or changed class may be what pending claims wait for.
	classChanged := func(q reconcile.Queue) informer.Handler {
		return informer.HandlerFuncs{
			AddFunc:    func(runtime.Object) { c.enqueuePending(q) },
			UpdateFunc: func(_, _ runtime.Object) { c.enqueuePending(q) },
		}
	}
	c.claimCtl = reconcile.NewController("persistentvolumeclaims", cfg.Options).
		For(cfg.ClaimInformer).
		Watches(cfg.ClaimInformer, onChange(c.seen)).
		Watches(cfg.VolumeInformer, onChange(c.claimsOfVolume)).
		Watches(cfg.ClassInformer, classChanged).
		Complete(reconcile.ReconcilerFunc(c.ReconcileClaim))
	c.volumeCtl = reconcile.NewController("persistentvolumes", cfg.Options).
		For(cfg.VolumeInformer).
		Watches(cfg.VolumeInformer, onChange(c.seen)).
		Watches(cfg.ClaimInformer, onChange(volumesOfClaim)).
		Reads(cfg.ClassInformer).
		Complete(reconcile.ReconcilerFunc(c.ReconcileVolume))
	return c
}

// onChange is an EventHandler that calls f with q and each added object, the new one of each
// update, and each deleted one.
func onChange(f func(q reconcile.Queue, obj runtime.Object)) reconcile.EventHandler {
	return func(q reconcile.Queue) informer.Handler {
		call := func(obj runtime.Object) { f(q, informer.DeletedObject(obj)) }
		return informer.HandlerFuncs{
			AddFunc:    call,
			UpdateFunc: func(_, obj runtime.Object) { call(obj) },
			DeleteFunc: call,
		}
	}
}

// seen forgets our writes of a claim or volume that the cache now shows.
func (c *Controller) seen(_ reconcile.Queue, obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		c.written.Behind(claimKey(o.Namespace, o.Name), o.ResourceVersion, c.cfg.Clock.Now())
	case *corev1.PersistentVolume:
		c.written.Behind(volumeKey(o.Name), o.ResourceVersion, c.cfg.Clock.Now())
	}
}

// volumesOfClaim queues the volumes whose phase follows a claim: the one it is bound to
// (bound, or released once it is gone), and the one provisioned for it, which it may not name
// yet.
func volumesOfClaim(q reconcile.Queue, obj runtime.Object) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	if pvc.Spec.VolumeName != "" {
		q.Add(pvc.Spec.VolumeName)
	}
	q.Add(VolumeName(pvc))
}

// claimsOfVolume queues the claim a volume names, or when it names none and is available,
// every claim still waiting for one.
func (c *Controller) claimsOfVolume(q reconcile.Queue, obj runtime.Object) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		q.Add(claimKey(ref.Namespace, ref.Name))
	} else if pv.Status.Phase == corev1.VolumeAvailable {
		c.enqueuePending(q)
	}
}

// enqueuePending queues every claim still waiting for a volume.
func (c *Controller) enqueuePending(q reconcile.Queue) {
	claims, _ := c.claims.List(nil)
	for _, pvc := range claims {
		if pvc.Spec.VolumeName == "" {
			q.Add(claimKey(pvc.Namespace, pvc.Name))
		}
	}
}

func claimKey(ns, name string) string { return ns + "/" + name }
func volumeKey(name string) string    { return "pv:" + name }

// Start makes the default class if asked, then reconciles until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.cfg.VolumeInformer.HasSynced, c.cfg.ClaimInformer.HasSynced, c.cfg.ClassInformer.HasSynced) {
		return nil
	}
	c.ensureDefaultClass(ctx)
	c.log.Info("started", "provisioner", c.cfg.Provisioner, "root", c.cfg.Root, "defaultClass", c.cfg.DefaultClass)
	var wg sync.WaitGroup
	for _, ctl := range []*reconcile.Controller{c.claimCtl, c.volumeCtl} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = ctl.Start(ctx) // returns nil when ctx ends
		}()
	}
	wg.Wait()
	return nil
}

func (c *Controller) ensureDefaultClass(ctx context.Context) {
	if c.cfg.DefaultClass == "" {
		return
	}
	classes, _ := c.classes.List(nil)
	for _, sc := range classes {
		if sc.Name == c.cfg.DefaultClass || IsDefaultClass(sc) {
			return
		}
	}
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: c.cfg.DefaultClass, Annotations: map[string]string{AnnDefaultClass: "true"}},
		Provisioner: c.cfg.Provisioner,
	}
	if _, err := c.cfg.Classes.Create(ctx, sc, metav1.CreateOptions{}); err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
		// Not fatal: claims naming a class still work, and the next start tries again.
		c.log.Warn("could not create the default storage class", "class", sc.Name, "err", err)
		return
	}
	c.log.Info("created the default storage class", "class", sc.Name, "provisioner", sc.Provisioner)
}

// report records an event unless the object's last one said the same.
func (c *Controller) report(key string, obj runtime.Object, ev *Event) {
	c.mu.Lock()
	if ev == nil {
		delete(c.reported, key)
		c.mu.Unlock()
		return
	}
	same := c.reported[key] == ev.Reason+": "+ev.Message
	c.reported[key] = ev.Reason + ": " + ev.Message
	c.mu.Unlock()
	if !same {
		c.cfg.Recorder.Eventf(obj, ev.Type, ev.Reason, "%s", ev.Message)
	}
}

// ReconcileClaim binds, provisions for, or reports on the claim key.
func (c *Controller) ReconcileClaim(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	pvc, err := c.claims.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.report(key, nil, nil)
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if c.written.Behind(key, pvc.ResourceVersion, c.cfg.Clock.Now()) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	volumes, _ := c.volumes.List(nil)
	classes, _ := c.classes.List(nil)
	d := DecideClaim(pvc, volumes, classes, c.cfg.Provisioner)
	switch {
	case d.SetClass != "":
		next := pvc.DeepCopy()
		next.Spec.StorageClassName = &d.SetClass
		out, err := c.cfg.Claims.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("assign default class to claim %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
		c.log.Debug("assigned the default class", "key", key, "class", d.SetClass)
		return reconcile.Result{}, nil
	case d.Bind != nil:
		c.report(key, pvc, nil)
		return c.bind(ctx, pvc, d.Bind)
	case d.Provision != nil:
		return c.provision(ctx, pvc, d.Provision)
	}
	if next := ClaimStatus(pvc, d.Phase, nil); d.Phase != "" && next != nil {
		out, err := c.cfg.Claims.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("claim %s status: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
	}
	c.report(key, pvc, d.Event)
	return reconcile.Result{}, nil
}

// bind makes the volume and the claim point at each other, volume first (its claimRef is
// what reserves it), then both statuses. Every step is skipped when already done, so a bind
// cut short by a Conflict or a crash is finished by the next sync.
func (c *Controller) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (reconcile.Result, error) {
	now := c.cfg.Clock.Now()
	if c.written.Behind(volumeKey(pv.Name), pv.ResourceVersion, now) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	key := claimKey(pvc.Namespace, pvc.Name)
	if next := BindVolume(pv, pvc); next != nil {
		out, err := c.cfg.Volumes.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("bind volume %s to claim %s: %w", pv.Name, key, err)
		}
		pv = out
		c.written.Wrote(volumeKey(pv.Name), pv.ResourceVersion, now)
	}
	if next := VolumeStatus(pv, VolumeDecision{Phase: corev1.VolumeBound}); next != nil {
		out, err := c.cfg.Volumes.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("volume %s status: %w", pv.Name, err)
		}
		pv = out
		c.written.Wrote(volumeKey(pv.Name), pv.ResourceVersion, now)
	}
	if next := BindClaim(pvc, pv); next != nil {
		out, err := c.cfg.Claims.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("bind claim %s to volume %s: %w", key, pv.Name, err)
		}
		pvc = out
		c.written.Wrote(key, pvc.ResourceVersion, now)
	}
	if next := ClaimStatus(pvc, corev1.ClaimBound, pv); next != nil {
		out, err := c.cfg.Claims.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("claim %s status: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
		c.log.Info("bound", "claim", key, "volume", pv.Name)
	}
	return reconcile.Result{}, nil
}

// provision makes a directory and a volume for the claim, then binds them.
func (c *Controller) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) (reconcile.Result, error) {
	key := claimKey(pvc.Namespace, pvc.Name)
	pv := ProvisionedVolume(pvc, sc, c.cfg.Root)
	if err := c.dirs.Make(pv); err != nil {
		c.report(key, pvc, &Event{corev1.EventTypeWarning, ReasonProvisioningFailed, err.Error()})
		return reconcile.Result{}, fmt.Errorf("provision for claim %s: %w", key, err)
	}
	out, err := c.cfg.Volumes.Create(ctx, pv, metav1.CreateOptions{})
	if errors.Is(err, apierror.ErrAlreadyExists) {
		// Made by an earlier sync whose answer was lost; the cache will show it.
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	} else if err != nil {
		c.report(key, pvc, &Event{corev1.EventTypeWarning, ReasonProvisioningFailed, err.Error()})
		return reconcile.Result{}, fmt.Errorf("provision for claim %s: %w", key, err)
	}
	c.written.Wrote(volumeKey(out.Name), out.ResourceVersion, c.cfg.Clock.Now())
	c.report(key, pvc, &Event{corev1.EventTypeNormal, ReasonProvisioning,
		fmt.Sprintf("Successfully provisioned volume %s (%s)", out.Name, out.Spec.HostPath.Path)})
	return c.bind(ctx, pvc, out)
}

// ReconcileVolume sets the phase of the volume name, and unbinds or deletes it once its claim
// is gone.
func (c *Controller) ReconcileVolume(ctx context.Context, name string) (reconcile.Result, error) {
	pv, err := c.volumes.Get("", name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.report(volumeKey(name), nil, nil)
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	now := c.cfg.Clock.Now()
	if c.written.Behind(volumeKey(name), pv.ResourceVersion, now) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	var pvc *corev1.PersistentVolumeClaim
	if ref := pv.Spec.ClaimRef; ref != nil {
		pvc, _ = c.claims.Get(ref.Namespace, ref.Name)
		if ref.UID != "" && (pvc == nil || pvc.UID != ref.UID) {
			// Released only when the apiserver agrees the claim is gone.
			live, err := c.cfg.Claims.Get(ctx, ref.Namespace, ref.Name, metav1.GetOptions{})
			switch {
			case err == nil:
				pvc = live
			case errors.Is(err, apierror.ErrNotFound):
				pvc = nil
			default:
				return reconcile.Result{}, fmt.Errorf("volume %s: read claim: %w", name, err)
			}
		}
	}
	d := DecideVolume(pv, pvc, c.cfg.Provisioner)
	switch d.Action {
	case SyncClaim:
		c.claimCtl.Add(claimKey(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name))
	case Unbind:
		out, err := c.cfg.Volumes.Update(ctx, UnbindVolume(pv), metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("unbind volume %s: %w", name, err)
		}
		pv = out
		c.written.Wrote(volumeKey(name), pv.ResourceVersion, now)
	}
	if next := VolumeStatus(pv, d); next != nil {
		out, err := c.cfg.Volumes.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("volume %s status: %w", name, err)
		}
		pv = out
		c.written.Wrote(volumeKey(name), pv.ResourceVersion, now)
	}
	c.report(volumeKey(name), pv, d.Event)
	if d.Action != Delete {
		return reconcile.Result{}, nil
	}
	if err := c.dirs.Remove(pv); err != nil {
		c.report(volumeKey(name), pv, &Event{corev1.EventTypeWarning, ReasonVolumeFailedDelete, err.Error()})
		return reconcile.Result{}, fmt.Errorf("delete volume %s: %w", name, err)
	}
	del := metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pv.UID))}
	if err := c.cfg.Volumes.Delete(ctx, "", pv.Name, del); err != nil && !errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, fmt.Errorf("delete volume %s: %w", name, err)
	}
	c.log.Info("deleted a released volume", "volume", name, "path", pv.Spec.HostPath.Path)
	return reconcile.Result{}, nil
}
