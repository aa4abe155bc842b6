package function

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/kubeletclient"
	"minik8s.io/shared/reconcile"
)

// Config wires a Controller.
type Config struct {
	// FunctionInformer, DeploymentInformer and NodeInformer are the shared caches.
	FunctionInformer, DeploymentInformer, NodeInformer *informer.Informer
	// Deployments writes the functions' Deployments, Functions their status.
	Deployments client.Writer[*appsv1.Deployment]
	Functions   client.Writer[*serverlessv1.Function]
	Builder     Builder
	Images      Images
	// Caller calls functions on their schedules; nil: schedules are not run.
	Caller   Caller
	Recorder Recorder
	// BuildTimeout bounds one build with its distribution to the nodes.
	BuildTimeout time.Duration
	// Options tune the loop: Workers reconcile that many functions at once (builds run
	// beside them); Resync is how often every function is revisited and images of deleted
	// functions are looked for; Metrics is the registry the loop reports to (nil: none).
	reconcile.Options
}

// Controller reconciles Functions. Build with New, run Start.
type Controller struct {
	*reconcile.Controller
	cfg         Config
	functions   informer.Lister[*serverlessv1.Function]
	deployments informer.Lister[*appsv1.Deployment]
	nodes       informer.Lister[*corev1.Node]
	schedules   *scheduler
	log         *slog.Logger

	mu sync.Mutex
	// builds are the builds running in this process, by function key.
	builds map[string]*build
	// outcomes are finished builds whose status is not written yet, by function key.
	outcomes map[string]BuildOutcome
	// prunedBelow is, by function key, the version below which old images are gone.
	prunedBelow map[string]int64
	// finished is, by function key, the last version whose build ended in this process: a
	// stale cache still showing it Running must not start it again.
	finished map[string]int64

	scheduleMu    sync.Mutex
	lastSchedules map[string][]serverlessv1.FunctionScheduleStatus
}

type build struct {
	version int64
	hash    string
	cancel  context.CancelFunc
}

// New returns a controller; it registers its handlers and starts nothing until Start.
func New(cfg Config) *Controller {
	cfg.Options = cfg.Options.WithDefaults()
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = 10 * time.Minute
	}
	c := &Controller{
		cfg:         cfg,
		functions:   informer.NewLister[*serverlessv1.Function](cfg.FunctionInformer.Store()),
		deployments: informer.NewLister[*appsv1.Deployment](cfg.DeploymentInformer.Store()),
		nodes:       informer.NewLister[*corev1.Node](cfg.NodeInformer.Store()),
		log:         cfg.Logger.With("controller", "function"),
		builds:      map[string]*build{},
		outcomes:    map[string]BuildOutcome{},
		prunedBelow: map[string]int64{},
		finished:    map[string]int64{},

		lastSchedules: map[string][]serverlessv1.FunctionScheduleStatus{},
	}
	c.schedules = newScheduler(cfg.Caller, c.recordScheduleCall, c.log)
	c.Controller = reconcile.NewController("function", cfg.Options).
		// A deleted function is reconciled too: the garbage collector removes the Deployment;
		// the sync of a missing function removes its images and schedules.
		For(cfg.FunctionInformer).
		Owns(cfg.DeploymentInformer, serverlessv1.SchemeGroupVersion.WithKind("Function")).
		// A node that joins, or comes back Ready, gets the images functions run now: their
		// pods may be scheduled there.
		Watches(cfg.NodeInformer, func(reconcile.Queue) informer.Handler {
			return informer.HandlerFuncs{
				AddFunc:    func(obj runtime.Object) { c.nodeReady(nil, obj) },
				UpdateFunc: c.nodeReady,
			}
		}).
		Resynced(c.queueGone).
		Complete(c)
	return c
}

// nodeReady sends the functions' current images to a node that just became Ready.
func (c *Controller) nodeReady(oldObj, obj runtime.Object) {
	n, ok := obj.(*corev1.Node)
	if !ok || !kubeletclient.Ready(n) || n.Spec.Unschedulable {
		return
	}
	if old, ok := oldObj.(*corev1.Node); ok && kubeletclient.Ready(old) {
		return
	}
	fns, _ := c.functions.List(nil)
	var images []string
	for _, fn := range fns {
		if fn.Status.Image != "" {
			images = append(images, fn.Status.Image)
		}
	}
	if len(images) == 0 {
		return
	}
	node := n.DeepCopy()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.BuildTimeout)
		defer cancel()
		for _, img := range images {
			if err := c.cfg.Images.Distribute(ctx, img, []*corev1.Node{node}); err != nil {
				c.log.Warn("sending a function image to a node that became ready", "node", node.Name, "image", img, "err", err)
			}
		}
	}()
}

// Start reconciles until ctx ends, then stops the builds and schedules and drains.
func (c *Controller) Start(ctx context.Context) error {
	if informer.WaitForSync(ctx, c.cfg.FunctionInformer.HasSynced, c.cfg.DeploymentInformer.HasSynced, c.cfg.NodeInformer.HasSynced) {
		c.schedules.start()
	}
	// Returns at once when ctx ended before the caches synced.
	err := c.Controller.Start(ctx)
	c.schedules.stop()
	c.mu.Lock()
	for _, b := range c.builds {
		b.cancel()
	}
	c.mu.Unlock()
	return err
}

// queueGone queues, each resync, every function that is gone but left images.
func (c *Controller) queueGone(ctx context.Context) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	keys, err := c.cfg.Images.Functions(lctx)
	if err != nil {
		c.log.Warn("listing function images", "err", err)
		return
	}
	for _, key := range keys {
		ns, name := informer.SplitKey(key)
		if _, err := c.functions.Get(ns, name); errors.Is(err, apierror.ErrNotFound) {
			c.Add(key)
		}
	}
}

// Reconcile builds the function key's source when it is new, runs its image in its
// Deployment, and reports both in its status; a deleted function's images and schedules go.
func (c *Controller) Reconcile(ctx context.Context, key string) (reconcile.Result, error) {
	ns, name := informer.SplitKey(key)
	cached, err := c.functions.Get(ns, name)
	if errors.Is(err, apierror.ErrNotFound) {
		return c.gone(ctx, key, ns, name)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if cached.DeletionTimestamp != nil {
		c.schedules.remove(key)
		return reconcile.Result{}, nil
	}
	fn := cached.DeepCopy()
	st := &cached.DeepCopy().Status
	now := c.cfg.Clock.Now()
	hash := SourceHash(&fn.Spec)

	// Builds: a finished one first, then a new source, then a build this process lost.
	c.mu.Lock()
	out, finished := c.outcomes[key]
	c.mu.Unlock()
	if finished {
		if st.Build == nil || st.Build.Version < out.Version {
			// The cache has not seen the status that started this build yet.
			return reconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		if FinishBuild(st, out, now) {
			if out.Err != nil {
				c.cfg.Recorder.Eventf(fn, corev1.EventTypeWarning, "BuildFailed", "version %d: %v", out.Version, out.Err)
			} else {
				c.cfg.Recorder.Eventf(fn, corev1.EventTypeNormal, "BuildSucceeded", "version %d built as %s and on the nodes", out.Version, out.Image)
			}
		}
	}
	switch {
	case hash != st.SourceHash:
		// Started already when the status saying so was refused as stale.
		if v := StartBuild(st, hash, now); !c.building(key, v, hash) {
			c.startBuild(fn, v, hash)
			c.cfg.Recorder.Eventf(fn, corev1.EventTypeNormal, "BuildStarted", "building version %d (source %s)", v, hash)
		}
	case st.Build != nil && st.Build.Phase == BuildRunning && !c.building(key, st.Build.Version, hash) && !c.ended(key, st.Build.Version):
		c.startBuild(fn, st.Build.Version, hash)
		c.cfg.Recorder.Eventf(fn, corev1.EventTypeNormal, "BuildStarted", "building version %d again (the last build was interrupted)", st.Build.Version)
	}

	dep, err := c.deployments.Get(ns, name)
	if err != nil && !errors.Is(err, apierror.ErrNotFound) {
		return reconcile.Result{}, err
	}
	if errors.Is(err, apierror.ErrNotFound) {
		dep = nil
	}
	var depRes reconcile.Result
	var depErr error
	if st.Image != "" {
		depRes, depErr = c.deploy(ctx, fn, st, dep)
	}
	Observe(fn, st, dep, now)
	if patch, changed := StatusPatch(fn.ResourceVersion, &fn.Status, st); changed {
		if err := patchStatus(ctx, c.cfg.Functions, ns, name, patch); err != nil {
			if errors.Is(err, apierror.ErrNotFound) {
				return reconcile.Result{}, nil
			}
			if errors.Is(err, apierror.ErrConflict) {
				return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
			}
			return reconcile.Result{}, fmt.Errorf("status of function %s: %w", key, err)
		}
	}
	if finished {
		c.mu.Lock()
		if o, ok := c.outcomes[key]; ok && o.Version == out.Version && o.SourceHash == out.SourceHash {
			delete(c.outcomes, key)
		}
		c.mu.Unlock()
	}
	c.schedules.set(key, fn.Spec.Schedules)
	if depErr != nil || depRes.RequeueAfter > 0 {
		return depRes, depErr
	}
	if dep != nil && ImageVersion(st.Image) == DeployedVersion(dep) && RolledOut(dep) && !c.anyBuilding() {
		c.prune(ctx, key, ns, name, DeployedVersion(dep))
	}
	return reconcile.Result{}, nil
}

// deploy creates or updates the function's Deployment to run st.Image.
func (c *Controller) deploy(ctx context.Context, fn *serverlessv1.Function, st *serverlessv1.FunctionStatus, have *appsv1.Deployment) (reconcile.Result, error) {
	want := Deployment(fn, st.Image, ImageVersion(st.Image), InitialReplicas(fn))
	if have == nil {
		_, err := c.cfg.Deployments.Create(ctx, want, metav1.CreateOptions{})
		if errors.Is(err, apierror.ErrAlreadyExists) {
			// The cache has not seen our last creation yet: look again once it has.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("create deployment %s/%s: %w", fn.Namespace, fn.Name, err)
		}
		c.cfg.Recorder.Eventf(fn, corev1.EventTypeNormal, "Deployed", "created deployment %s with version %d", fn.Name, ImageVersion(st.Image))
		return reconcile.Result{}, nil
	}
	if ref := metav1.GetControllerOf(have); ref == nil || ref.UID != fn.UID {
		c.cfg.Recorder.Eventf(fn, corev1.EventTypeWarning, "DeploymentConflict", "deployment %s exists and is not this function's", fn.Name)
		return reconcile.Result{}, fmt.Errorf("deployment %s/%s is not owned by the function", fn.Namespace, fn.Name)
	}
	upd, ok := NeedsUpdate(have, want)
	if !ok {
		return reconcile.Result{}, nil
	}
	if _, err := c.cfg.Deployments.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if errors.Is(err, apierror.ErrConflict) {
			return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		return reconcile.Result{}, fmt.Errorf("update deployment %s/%s: %w", fn.Namespace, fn.Name, err)
	}
	if DeployedVersion(have) != ImageVersion(st.Image) {
		c.cfg.Recorder.Eventf(fn, corev1.EventTypeNormal, "RollingOut", "deployment %s rolls out version %d", fn.Name, ImageVersion(st.Image))
	}
	return reconcile.Result{}, nil
}

// building reports whether this process builds key's version from hash (any build with
// version 0).
func (c *Controller) building(key string, version int64, hash string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.builds[key]
	return b != nil && (version == 0 || (b.version == version && b.hash == hash))
}

// anyBuilding reports whether a build runs: removing an image takes its unused parent layers
// with it, and a build may be reusing them from the cache (every function shares the first).
func (c *Controller) anyBuilding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.builds) > 0
}

// ended reports whether the build of key's version ended in this process.
func (c *Controller) ended(key string, version int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished[key] >= version
}

// startBuild builds and distributes one version in the background, replacing any build of
// the same function; its outcome queues the function.
func (c *Controller) startBuild(fn *serverlessv1.Function, version int64, hash string) {
	key := fn.Namespace + "/" + fn.Name
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.BuildTimeout)
	b := &build{version: version, hash: hash, cancel: cancel}
	c.mu.Lock()
	if old := c.builds[key]; old != nil {
		old.cancel()
	}
	c.builds[key] = b
	c.mu.Unlock()
	runtime := fn.Spec.Runtime
	if runtime == "" {
		runtime = DefaultRuntime
	}
	req := BuildRequest{Namespace: fn.Namespace, Name: fn.Name, Version: version, Image: ImageName(fn.Namespace, fn.Name, version),
		Runtime: runtime, Handler: fn.Spec.Handler, Source: fn.Spec.Source, Requirements: fn.Spec.Requirements}
	ref := fn.DeepCopy()
	go func() {
		defer cancel()
		start := c.cfg.Clock.Now()
		log, err := c.cfg.Builder.Build(ctx, req, func(line string) {
			if line = strings.TrimSpace(line); Milestone(line) {
				c.cfg.Recorder.Eventf(ref, corev1.EventTypeNormal, "Building", "version %d: %s", version, line)
			}
		})
		if err == nil {
			nodes := c.readyNodes()
			if err = c.cfg.Images.Distribute(ctx, req.Image, nodes); err != nil {
				err = fmt.Errorf("put %s on the nodes: %w", req.Image, err)
			}
		}
		c.log.Info("build finished", "key", key, "version", version, "took", c.cfg.Clock.Since(start), "err", err)
		c.mu.Lock()
		if c.builds[key] == b {
			delete(c.builds, key)
		}
		c.finished[key] = max(c.finished[key], version)
		if ctx.Err() == nil || err == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// A build replaced by a newer one (canceled) has nothing to say.
			c.outcomes[key] = BuildOutcome{Version: version, SourceHash: hash, Image: req.Image, Log: log, Err: err}
		}
		c.mu.Unlock()
		c.Add(key)
	}()
}

// readyNodes are the nodes pods may run on: every node not marked unschedulable.
func (c *Controller) readyNodes() []*corev1.Node {
	nodes, _ := c.nodes.List(nil)
	out := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if !n.Spec.Unschedulable {
			out = append(out, n)
		}
	}
	return out
}

// gone cleans up after a deleted function: its build, schedules and images.
func (c *Controller) gone(ctx context.Context, key, ns, name string) (reconcile.Result, error) {
	c.schedules.remove(key)
	c.mu.Lock()
	if b := c.builds[key]; b != nil {
		b.cancel()
		delete(c.builds, key)
	}
	delete(c.outcomes, key)
	delete(c.prunedBelow, key)
	delete(c.finished, key)
	c.mu.Unlock()
	inUse, err := c.cfg.Images.Remove(ctx, ns, name, 0)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("remove images of %s: %w", key, err)
	}
	if len(inUse) > 0 {
		// A pod of the function may still be stopping.
		return reconcile.Result{RequeueAfter: 5 * time.Second}, nil
	}
	return reconcile.Result{}, nil
}

// prune removes the images of versions older than deployed once no pod runs them.
func (c *Controller) prune(ctx context.Context, key, ns, name string, deployed int64) {
	c.mu.Lock()
	from := c.prunedBelow[key]
	c.mu.Unlock()
	if from >= deployed {
		return
	}
	inUse, err := c.cfg.Images.Remove(ctx, ns, name, deployed)
	if err != nil {
		c.log.Warn("removing images of old versions", "key", key, "err", err)
		return
	}
	if len(inUse) > 0 {
		c.log.Info("images of old versions still in use, will retry", "key", key, "images", inUse)
		return
	}
	c.mu.Lock()
	c.prunedBelow[key] = deployed
	c.mu.Unlock()
}

// Milestone reports whether a line of build output is worth an Event: the build's steps and
// what pip fetches and installs, not Docker's intermediate containers and layer ids.
func Milestone(line string) bool {
	for _, p := range []string{"Step ", "Collecting ", "Successfully installed", "ERROR", "Successfully tagged"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}
