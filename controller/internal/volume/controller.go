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
	"minik8s.io/shared/informer"
	"minik8s.io/shared/reconcile"
	"minik8s.io/shared/workqueue/clock"
)

// Config wires a Controller.
type Config struct {
	// Volumes, Claims and Classes are the shared informers.
	Volumes, Claims, Classes *informer.Informer
	API                      API
	Recorder                 Recorder
	// Provisioner is the provisioner name whose classes we provision for (DefaultProvisioner).
	Provisioner string
	// Root is the directory provisioned volumes live under, the same path on every node.
	Root string
	// DefaultClass, when set, is the StorageClass made at start (ours, marked default) when no
	// class is marked default and none has that name.
	DefaultClass string
	Workers      int
	// Resync is how often every claim and volume is looked at again.
	Resync time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Controller binds claims and volumes. Build with New, run Start.
type Controller struct {
	cfg     Config
	volumes informer.Lister[*corev1.PersistentVolume]
	claims  informer.Lister[*corev1.PersistentVolumeClaim]
	classes informer.Lister[*storagev1.StorageClass]
	dirs    Dirs
	claimQ  *reconcile.Loop
	volumeQ *reconcile.Loop
	written reconcile.Written
	log     *slog.Logger

	mu sync.Mutex
	// reported is the last event message per object, so a resync does not repeat it.
	reported map[string]string
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Resync <= 0 {
		cfg.Resync = 15 * time.Second
	}
	c := &Controller{
		cfg:      cfg,
		volumes:  informer.NewLister[*corev1.PersistentVolume](cfg.Volumes.Store()),
		claims:   informer.NewLister[*corev1.PersistentVolumeClaim](cfg.Claims.Store()),
		classes:  informer.NewLister[*storagev1.StorageClass](cfg.Classes.Store()),
		dirs:     Dirs{Root: cfg.Root},
		log:      cfg.Logger.With("controller", "persistentvolume-binder"),
		reported: map[string]string{},
	}
	synced := []func() bool{cfg.Volumes.HasSynced, cfg.Claims.HasSynced, cfg.Classes.HasSynced}
	c.claimQ = reconcile.New("persistentvolumeclaims", cfg.Clock)
	c.claimQ.Sync, c.claimQ.Keys, c.claimQ.Synced, c.claimQ.Resync, c.claimQ.Logger = c.syncClaim, c.claimKeys, synced, cfg.Resync, cfg.Logger
	c.volumeQ = reconcile.New("persistentvolumes", cfg.Clock)
	c.volumeQ.Sync, c.volumeQ.Keys, c.volumeQ.Synced, c.volumeQ.Resync, c.volumeQ.Logger = c.syncVolume, c.volumeKeys, synced, cfg.Resync, cfg.Logger
	if cfg.Workers > 0 {
		c.claimQ.Workers, c.volumeQ.Workers = cfg.Workers, cfg.Workers
	}
	cfg.Claims.AddEventHandler(informer.HandlerFuncs{
		AddFunc:    c.claimChanged,
		UpdateFunc: func(_, obj runtime.Object) { c.claimChanged(obj) },
		DeleteFunc: c.claimChanged,
	})
	cfg.Volumes.AddEventHandler(informer.HandlerFuncs{
		AddFunc:    c.volumeChanged,
		UpdateFunc: func(_, obj runtime.Object) { c.volumeChanged(obj) },
		DeleteFunc: c.volumeChanged,
	})
	// A new or changed class may be what pending claims wait for.
	cfg.Classes.AddEventHandler(informer.HandlerFuncs{
		AddFunc:    func(runtime.Object) { c.enqueuePending() },
		UpdateFunc: func(_, _ runtime.Object) { c.enqueuePending() },
	})
	return c
}

func (c *Controller) claimChanged(obj runtime.Object) {
	pvc, ok := informer.DeletedObject(obj).(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	c.written.Behind(claimKey(pvc.Namespace, pvc.Name), pvc.ResourceVersion, c.cfg.Clock.Now())
	c.claimQ.Add(claimKey(pvc.Namespace, pvc.Name))
	// Its volume's phase follows it: bound, or released once it is gone.
	if pvc.Spec.VolumeName != "" {
		c.volumeQ.Add(pvc.Spec.VolumeName)
	}
	// The volume provisioned for it, which it may not name yet.
	c.volumeQ.Add(VolumeName(pvc))
}

func (c *Controller) volumeChanged(obj runtime.Object) {
	pv, ok := informer.DeletedObject(obj).(*corev1.PersistentVolume)
	if !ok {
		return
	}
	c.written.Behind(volumeKey(pv.Name), pv.ResourceVersion, c.cfg.Clock.Now())
	c.volumeQ.Add(pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil {
		c.claimQ.Add(claimKey(ref.Namespace, ref.Name))
	} else if pv.Status.Phase == corev1.VolumeAvailable {
		c.enqueuePending()
	}
}

// enqueuePending queues every claim still waiting for a volume.
func (c *Controller) enqueuePending() {
	claims, _ := c.claims.List(nil)
	for _, pvc := range claims {
		if pvc.Spec.VolumeName == "" {
			c.claimQ.Add(claimKey(pvc.Namespace, pvc.Name))
		}
	}
}

func claimKey(ns, name string) string { return ns + "/" + name }
func volumeKey(name string) string    { return "pv:" + name }

func (c *Controller) claimKeys() []string {
	claims, _ := c.claims.List(nil)
	keys := make([]string, 0, len(claims))
	for _, pvc := range claims {
		keys = append(keys, claimKey(pvc.Namespace, pvc.Name))
	}
	return keys
}

func (c *Controller) volumeKeys() []string {
	pvs, _ := c.volumes.List(nil)
	keys := make([]string, 0, len(pvs))
	for _, pv := range pvs {
		keys = append(keys, pv.Name)
	}
	return keys
}

// Start makes the default class if asked, then reconciles until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	if !informer.WaitForSync(ctx, c.cfg.Volumes.HasSynced, c.cfg.Claims.HasSynced, c.cfg.Classes.HasSynced) {
		return nil
	}
	c.ensureDefaultClass(ctx)
	c.log.Info("started", "provisioner", c.cfg.Provisioner, "root", c.cfg.Root, "defaultClass", c.cfg.DefaultClass)
	var wg sync.WaitGroup
	for _, l := range []*reconcile.Loop{c.claimQ, c.volumeQ} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Run(ctx) // returns nil when ctx ends
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
	if err := c.cfg.API.CreateClass(ctx, sc); err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
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

func (c *Controller) syncClaim(ctx context.Context, key string) error {
	ns, name := informer.SplitKey(key)
	pvc, err := c.claims.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.report(key, nil, nil)
		return nil
	} else if err != nil {
		return err
	}
	if c.written.Behind(key, pvc.ResourceVersion, c.cfg.Clock.Now()) {
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	volumes, _ := c.volumes.List(nil)
	classes, _ := c.classes.List(nil)
	d := DecideClaim(pvc, volumes, classes, c.cfg.Provisioner)
	switch {
	case d.SetClass != "":
		next := pvc.DeepCopy()
		next.Spec.StorageClassName = &d.SetClass
		out, err := c.cfg.API.UpdateClaim(ctx, next)
		if err != nil {
			return fmt.Errorf("assign default class to claim %s: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
		c.log.Debug("assigned the default class", "key", key, "class", d.SetClass)
		return nil
	case d.Bind != nil:
		c.report(key, pvc, nil)
		return c.bind(ctx, pvc, d.Bind)
	case d.Provision != nil:
		return c.provision(ctx, pvc, d.Provision)
	}
	if next := ClaimStatus(pvc, d.Phase, nil); d.Phase != "" && next != nil {
		out, err := c.cfg.API.UpdateClaimStatus(ctx, next)
		if err != nil {
			return fmt.Errorf("claim %s status: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, c.cfg.Clock.Now())
	}
	c.report(key, pvc, d.Event)
	return nil
}

// bind makes the volume and the claim point at each other, volume first (its claimRef is
// what reserves it), then both statuses. Every step is skipped when already done, so a bind
// cut short by a Conflict or a crash is finished by the next sync.
func (c *Controller) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	now := c.cfg.Clock.Now()
	if c.written.Behind(volumeKey(pv.Name), pv.ResourceVersion, now) {
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	key := claimKey(pvc.Namespace, pvc.Name)
	if next := BindVolume(pv, pvc); next != nil {
		out, err := c.cfg.API.UpdateVolume(ctx, next)
		if err != nil {
			return fmt.Errorf("bind volume %s to claim %s: %w", pv.Name, key, err)
		}
		pv = out
		c.written.Wrote(volumeKey(pv.Name), pv.ResourceVersion, now)
	}
	if next := VolumeStatus(pv, VolumeDecision{Phase: corev1.VolumeBound}); next != nil {
		out, err := c.cfg.API.UpdateVolumeStatus(ctx, next)
		if err != nil {
			return fmt.Errorf("volume %s status: %w", pv.Name, err)
		}
		pv = out
		c.written.Wrote(volumeKey(pv.Name), pv.ResourceVersion, now)
	}
	if next := BindClaim(pvc, pv); next != nil {
		out, err := c.cfg.API.UpdateClaim(ctx, next)
		if err != nil {
			return fmt.Errorf("bind claim %s to volume %s: %w", key, pv.Name, err)
		}
		pvc = out
		c.written.Wrote(key, pvc.ResourceVersion, now)
	}
	if next := ClaimStatus(pvc, corev1.ClaimBound, pv); next != nil {
		out, err := c.cfg.API.UpdateClaimStatus(ctx, next)
		if err != nil {
			return fmt.Errorf("claim %s status: %w", key, err)
		}
		c.written.Wrote(key, out.ResourceVersion, now)
		c.log.Info("bound", "claim", key, "volume", pv.Name)
	}
	return nil
}

// provision makes a directory and a volume for the claim, then binds them.
func (c *Controller) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass) error {
	key := claimKey(pvc.Namespace, pvc.Name)
	pv := ProvisionedVolume(pvc, sc, c.cfg.Root)
	if err := c.dirs.Make(pv); err != nil {
		c.report(key, pvc, &Event{corev1.EventTypeWarning, ReasonProvisioningFailed, err.Error()})
		return fmt.Errorf("provision for claim %s: %w", key, err)
	}
	out, err := c.cfg.API.CreateVolume(ctx, pv)
	if errors.Is(err, apierror.ErrAlreadyExists) {
		// Made by an earlier sync whose answer was lost; the cache will show it.
		return reconcile.Requeue{After: 100 * time.Millisecond}
	} else if err != nil {
		c.report(key, pvc, &Event{corev1.EventTypeWarning, ReasonProvisioningFailed, err.Error()})
		return fmt.Errorf("provision for claim %s: %w", key, err)
	}
	c.written.Wrote(volumeKey(out.Name), out.ResourceVersion, c.cfg.Clock.Now())
	c.report(key, pvc, &Event{corev1.EventTypeNormal, ReasonProvisioning,
		fmt.Sprintf("Successfully provisioned volume %s (%s)", out.Name, out.Spec.HostPath.Path)})
	return c.bind(ctx, pvc, out)
}

func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.volumes.Get("", name)
	if errors.Is(err, apierror.ErrNotFound) {
		c.report(volumeKey(name), nil, nil)
		return nil
	} else if err != nil {
		return err
	}
	now := c.cfg.Clock.Now()
	if c.written.Behind(volumeKey(name), pv.ResourceVersion, now) {
		return reconcile.Requeue{After: 100 * time.Millisecond}
	}
	var pvc *corev1.PersistentVolumeClaim
	if ref := pv.Spec.ClaimRef; ref != nil {
		pvc, _ = c.claims.Get(ref.Namespace, ref.Name)
		if ref.UID != "" && (pvc == nil || pvc.UID != ref.UID) {
			// Released only when the apiserver agrees the claim is gone.
			live, err := c.cfg.API.GetClaim(ctx, ref.Namespace, ref.Name)
			switch {
			case err == nil:
				pvc = live
			case errors.Is(err, apierror.ErrNotFound):
				pvc = nil
			default:
				return fmt.Errorf("volume %s: read claim: %w", name, err)
			}
		}
	}
	d := DecideVolume(pv, pvc, c.cfg.Provisioner)
	switch d.Action {
	case SyncClaim:
		c.claimQ.Add(claimKey(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name))
	case Unbind:
		out, err := c.cfg.API.UpdateVolume(ctx, UnbindVolume(pv))
		if err != nil {
			return fmt.Errorf("unbind volume %s: %w", name, err)
		}
		pv = out
		c.written.Wrote(volumeKey(name), pv.ResourceVersion, now)
	}
	if next := VolumeStatus(pv, d); next != nil {
		out, err := c.cfg.API.UpdateVolumeStatus(ctx, next)
		if err != nil {
			return fmt.Errorf("volume %s status: %w", name, err)
		}
		pv = out
		c.written.Wrote(volumeKey(name), pv.ResourceVersion, now)
	}
	c.report(volumeKey(name), pv, d.Event)
	if d.Action != Delete {
		return nil
	}
	if err := c.dirs.Remove(pv); err != nil {
		c.report(volumeKey(name), pv, &Event{corev1.EventTypeWarning, ReasonVolumeFailedDelete, err.Error()})
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	if err := c.cfg.API.DeleteVolume(ctx, pv); err != nil && !errors.Is(err, apierror.ErrNotFound) {
		return fmt.Errorf("delete volume %s: %w", name, err)
	}
	c.log.Info("deleted a released volume", "volume", name, "path", pv.Spec.HostPath.Path)
	return nil
}
