package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/scheduler/internal/cache"
	"minik8s.io/scheduler/internal/framework"
	"minik8s.io/scheduler/internal/queue"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// Names a pod may carry in spec.schedulerName for this scheduler to take it.
const (
	DefaultSchedulerName = "default-scheduler"
	// Name is the Event source component.
	Name = "default-scheduler"
)

// API is what the loop writes: the binding and the pod's status.
type API interface {
	// Bind assigns pod to node through the pods/binding subresource.
	Bind(ctx context.Context, pod *corev1.Pod, node string) error
	// UpdatePodStatus writes pod's status with the resourceVersion it carries.
	UpdatePodStatus(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error)
}

// PodLister reads pods from the informer cache.
type PodLister interface {
	Get(namespace, name string) (*corev1.Pod, error)
}

// Recorder reports events (shared/record's Recorder, or its Fake in tests).
type Recorder = record.EventRecorder

// Leader says whether this process may bind (leaderelection.Elector). Nil means always.
type Leader interface {
	IsLeader() bool
}

// Config wires a Scheduler.
type Config struct {
	API      API
	Pods     PodLister
	Cache    *cache.Cache
	Queue    *queue.Queue
	Strategy framework.Strategy
	Filters  []framework.Filter // nil means framework.DefaultFilters()
	// Volumes, when set, are the claims and volumes pods' persistentVolumeClaim volumes are
	// checked against: a pod waits until its claims are bound (framework.CheckClaims), and
	// a bound volume's node affinity limits the nodes (framework.VolumeNodeAffinity, added to
	// Filters).
	Volumes  framework.Volumes
	Recorder Recorder
	Leader   Leader
	Clock    clock.Clock
	Logger   *slog.Logger
	// BindWorkers is how many bindings Start runs at once; zero means DefaultBindWorkers.
	// A binding is a round trip to the store, so binding one pod at a time would cap
	// throughput at one pod per store latency while the loop itself sits idle.
	BindWorkers int
	// PercentageOfNodesToScore bounds the search for feasible nodes (see
	// framework.NumFeasibleNodesToFind): 0 is adaptive, 100 looks at every node.
	PercentageOfNodesToScore int
	// Attempted, when set, is told how each attempt that decided ended: AttemptScheduled (bound),
	// AttemptUnschedulable (fits nowhere) or AttemptError (the binding failed).
	Attempted func(result string)
}

// Results of an attempt, for Config.Attempted (kube-scheduler's schedule_attempts_total).
const (
	AttemptScheduled     = "scheduled"
	AttemptUnschedulable = "unschedulable"
	AttemptError         = "error"
)

func (s *Scheduler) attempted(result string) {
	if s.cfg.Attempted != nil {
		s.cfg.Attempted(result)
	}
}

// SweepMinAge is how old a pending pod must be before Sweep may call it lost.
const SweepMinAge = 10 * time.Second

// DefaultBindWorkers is Config.BindWorkers when unset.
const DefaultBindWorkers = 64

// Scheduler runs the loop. Build with New, register PodHandler and NodeHandler on the
// informers, and run Start.
type Scheduler struct {
	cfg Config
	log *slog.Logger

	// snap, nextStart and feasible belong to the goroutine that runs process (Start's loop,
	// or the caller of ScheduleNext): the cache's nodes as of the last decision, where the
	// next search for feasible nodes starts, and the array the searches fill.
	snap      cache.Snapshot
	nextStart int
	feasible  []*framework.NodeInfo
}

// New returns a Scheduler; it starts nothing.
func New(cfg Config) *Scheduler {
	if cfg.Filters == nil {
		cfg.Filters = framework.DefaultFilters()
	}
	if cfg.Volumes != nil {
		cfg.Filters = append(slices.Clip(cfg.Filters), framework.VolumeNodeAffinity(cfg.Volumes))
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.BindWorkers <= 0 {
		cfg.BindWorkers = DefaultBindWorkers
	}
	return &Scheduler{cfg: cfg, log: cfg.Logger}
}

// Responsible reports whether pod waits for this scheduler: no node yet, not being deleted,
// and addressed to the default scheduler.
func Responsible(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		(pod.Spec.SchedulerName == "" || pod.Spec.SchedulerName == DefaultSchedulerName)
}

// Start schedules pods until ctx ends. While not the leader it waits, so a standby keeps its
// cache warm without binding anything. Bindings run on Config.BindWorkers goroutines; the
// loop assumes each pod on its node before handing it over, so the next decision already
// counts it, and a worker marks the key done only after the binding, so the queue never
// hands the same pod out twice meanwhile.
func (s *Scheduler) Start(ctx context.Context) error {
	stop := context.AfterFunc(ctx, s.cfg.Queue.ShutDown)
	defer stop()
	binds := make(chan bindJob)
	var wg sync.WaitGroup
	for range s.cfg.BindWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range binds {
				s.bind(ctx, j)
				s.cfg.Queue.Done(j.key)
			}
		}()
	}
	defer func() {
		close(binds)
		wg.Wait()
	}()
	for {
		if !s.waitLeader(ctx) {
			return nil
		}
		key, shutdown := s.cfg.Queue.Get()
		if shutdown {
			return nil
		}
		j, ok := s.process(ctx, key)
		if !ok {
			s.cfg.Queue.Done(key)
			continue
		}
		// Blocks while every worker is busy: the pool is the back-pressure.
		binds <- j
	}
}

func (s *Scheduler) waitLeader(ctx context.Context) bool {
	for s.cfg.Leader != nil && !s.cfg.Leader.IsLeader() {
		t := s.cfg.Clock.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
	}
	return ctx.Err() == nil
}

// ScheduleNext handles one key if one is ready and reports whether it did; the test harness
// drives the loop with it.
func (s *Scheduler) ScheduleNext(ctx context.Context) bool {
	if s.cfg.Queue.Len() == 0 {
		return false
	}
	key, shutdown := s.cfg.Queue.Get()
	if shutdown {
		return false
	}
	if j, ok := s.process(ctx, key); ok {
		s.bind(ctx, j)
	}
	s.cfg.Queue.Done(key)
	return true
}

// bindJob is a decision waiting for its binding; the pod is already assumed on node.
type bindJob struct {
	key  string
	pod  *corev1.Pod
	node string
}

// process decides where the pod under key goes and assumes it there. It returns the
// binding still to make, or false when there is none.
func (s *Scheduler) process(ctx context.Context, key string) (bindJob, bool) {
	ns, name := informer.SplitKey(key)
	pod, err := s.cfg.Pods.Get(ns, name)
	if err != nil || !Responsible(pod) {
		// Deleted, bound by someone, or not ours: nothing to do.
		s.cfg.Queue.Forget(key)
		return bindJob{}, false
	}
	if s.cfg.Leader != nil && !s.cfg.Leader.IsLeader() {
		s.cfg.Queue.Retry(key)
		return bindJob{}, false
	}
	if s.cfg.Cache.IsAssumed(ns, name) {
		// Bound a moment ago; the cache has not seen the binding yet.
		return bindJob{}, false
	}
	feasible, err := s.findFeasible(pod)
	if err != nil {
		s.log.Debug("unschedulable", "pod", key, "reason", err.Error())
		s.unschedulable(ctx, pod, err.Error())
		s.cfg.Queue.Unschedulable(key)
		s.attempted(AttemptUnschedulable)
		return bindJob{}, false
	}
	node := s.cfg.Strategy.Select(pod, feasible).Name()
	s.cfg.Cache.Assume(pod, node)
	return bindJob{key: key, pod: pod, node: node}, true
}

// findFeasible brings the snapshot up to date and searches it for nodes that can take pod:
// from where the last search stopped, until it has as many as the strategy needs.
func (s *Scheduler) findFeasible(pod *corev1.Pod) ([]*framework.NodeInfo, error) {
	s.cfg.Cache.UpdateSnapshot(&s.snap)
	nodes := s.snap.Nodes()
	if len(nodes) == 0 {
		return nil, &framework.FitError{}
	}
	if s.cfg.Volumes != nil {
		if msg := framework.CheckClaims(pod, s.cfg.Volumes); msg != "" {
			return nil, &framework.FitError{NumNodes: len(nodes), PreFilter: msg}
		}
	}
	start, want := s.nextStart%len(nodes), framework.NumFeasibleNodesToFind(len(nodes), s.cfg.PercentageOfNodesToScore)
	if sp, ok := s.cfg.Strategy.(framework.Sampler); ok {
		start, want = sp.Sample(nodes)
	}
	feasible, examined, err := framework.FindFeasible(s.feasible, s.cfg.Filters, pod, nodes, start, want)
	if feasible != nil {
		s.feasible = feasible // the next search reuses the array: up to hundreds of nodes a pod
	}
	s.nextStart = (start + examined) % len(nodes)
	if err != nil {
		return nil, err
	}
	// Strategies see the nodes in name order, which their tie-breaking relies on.
	if len(feasible) > 1 && start+examined > len(nodes) {
		slices.SortFunc(feasible, func(a, b *framework.NodeInfo) int { return strings.Compare(a.Name(), b.Name()) })
	}
	return feasible, nil
}

// bind makes the binding of an assumed pod, and forgets the assumption when it fails.
func (s *Scheduler) bind(ctx context.Context, j bindJob) {
	pod, node, key := j.pod, j.node, j.key
	// No s.log.With per pod: it copies the logger's attributes, for lines that are mostly
	// below the level.
	err := s.cfg.API.Bind(ctx, pod, node)
	switch {
	case err == nil:
		s.log.Debug("bound", "pod", key, "node", node)
		s.cfg.Queue.Forget(key)
		s.attempted(AttemptScheduled)
		s.cfg.Recorder.Eventf(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", pod.Namespace, pod.Name, node)
	case errors.Is(err, apierror.ErrConflict), errors.Is(err, apierror.ErrNotFound):
		// Bound by another scheduler already, or gone: the informer will tell us which.
		s.log.Debug("binding refused", "pod", key, "node", node, "err", err)
		s.cfg.Cache.Forget(pod.Namespace, pod.Name)
		s.cfg.Queue.Forget(key)
	default:
		s.log.Warn("binding failed", "pod", key, "node", node, "err", err)
		s.cfg.Cache.Forget(pod.Namespace, pod.Name)
		s.cfg.Queue.Retry(key)
		s.attempted(AttemptError)
	}
}

// unschedulable records why pod fits nowhere: the PodScheduled condition, written only when
// it changes so retries do not churn the pod, and a FailedScheduling Event.
func (s *Scheduler) unschedulable(ctx context.Context, pod *corev1.Pod, msg string) {
	s.cfg.Recorder.Eventf(pod, corev1.EventTypeWarning, "FailedScheduling", "%s", msg)
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg}
	p := pod.DeepCopy()
	found := false
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != corev1.PodScheduled {
			continue
		}
		found = true
		if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
			return
		}
		if c.Status != cond.Status {
			c.LastTransitionTime = metav1.NewTime(s.cfg.Clock.Now())
		}
		c.Status, c.Reason, c.Message = cond.Status, cond.Reason, cond.Message
	}
	if !found {
		cond.LastTransitionTime = metav1.NewTime(s.cfg.Clock.Now())
		p.Status.Conditions = append(p.Status.Conditions, cond)
	}
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
	}
	if _, err := s.cfg.API.UpdatePodStatus(ctx, p); err != nil && !errors.Is(err, apierror.ErrConflict) {
		// A conflict means a newer pod is on its way; the retry writes the condition again.
		s.log.Warn("writing the PodScheduled condition", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// Sweep adds every pod of pods that waits for this scheduler but that the queue does not hold
// and no binding is under way for, and returns how many it added. The queue should never
// lose a pending pod; Sweep is the safety net that makes such a loss cost one sweep period
// instead of the pod, and its warning makes the loss visible.
//
// Pods younger than SweepMinAge are left alone: their Add may still be on its way from the
// informer to the queue.
func (s *Scheduler) Sweep(pods []*corev1.Pod) int {
	n := 0
	now := s.cfg.Clock.Now()
	for _, pod := range pods {
		key := pod.Namespace + "/" + pod.Name
		if !Responsible(pod) || now.Sub(pod.CreationTimestamp.Time) < SweepMinAge || s.cfg.Queue.Has(key) || s.cfg.Cache.IsAssumed(pod.Namespace, pod.Name) {
			continue
		}
		s.log.Warn("pending pod was in no queue; adding it again", "pod", key)
		s.cfg.Queue.SetPriority(key, podPriority(pod))
		s.cfg.Queue.Add(key)
		n++
	}
	return n
}

// PodHandler keeps the cache and the queue in step with pods.
func (s *Scheduler) PodHandler() informer.Handler {
	return informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if pod, ok := obj.(*corev1.Pod); ok {
				s.podChanged(pod, true)
			}
		},
		UpdateFunc: func(oldObj, newObj runtime.Object) {
			oldPod, ok1 := oldObj.(*corev1.Pod)
			pod, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 {
				return
			}
			// Our own status write comes back as an update; only a change of what a waiting
			// pod asks for is worth an immediate retry. (A bound pod is never queued, so the
			// comparison, which costs more than the rest of the update, is skipped for it.)
			s.podChanged(pod, pod.Spec.NodeName == "" && (oldPod.UID != pod.UID ||
				!equality.Semantic.DeepEqual(oldPod.Spec, pod.Spec) || !equality.Semantic.DeepEqual(oldPod.Labels, pod.Labels)))
		},
		DeleteFunc: func(obj runtime.Object) {
			pod, ok := informer.DeletedObject(obj).(*corev1.Pod)
			if !ok {
				return
			}
			s.cfg.Cache.RemovePod(pod.Namespace, pod.Name)
			s.cfg.Queue.Forget(pod.Namespace + "/" + pod.Name)
			if pod.Spec.NodeName != "" {
				s.cfg.Queue.MoveAllToActive()
			}
		},
	}
}

func (s *Scheduler) podChanged(pod *corev1.Pod, enqueue bool) {
	key := pod.Namespace + "/" + pod.Name
	s.cfg.Cache.SetPod(pod)
	switch {
	case pod.Spec.NodeName != "":
		s.cfg.Queue.Forget(key)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			s.cfg.Queue.MoveAllToActive()
		}
	case Responsible(pod) && enqueue:
		s.cfg.Queue.SetPriority(key, podPriority(pod))
		s.cfg.Queue.Add(key)
	}
}

// podPriority is the priority admission gave the pod (0 without one).
func podPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// NodeHandler keeps the cache in step with nodes and retries waiting pods when a node changes
// in a way that may let them fit.
// VolumeHandler is the handler of the claim and volume informers: a claim bound, or a volume
// added or changed, may let pods waiting on their claims go on.
func (s *Scheduler) VolumeHandler() informer.Handler {
	return informer.HandlerFuncs{
		AddFunc:    func(runtime.Object) { s.cfg.Queue.MoveAllToActive() },
		UpdateFunc: func(_, _ runtime.Object) { s.cfg.Queue.MoveAllToActive() },
	}
}

func (s *Scheduler) NodeHandler() informer.Handler {
	return informer.HandlerFuncs{
		AddFunc: func(obj runtime.Object) {
			if n, ok := obj.(*corev1.Node); ok {
				s.cfg.Cache.SetNode(n)
				s.cfg.Queue.MoveAllToActive()
			}
		},
		UpdateFunc: func(oldObj, newObj runtime.Object) {
			oldNode, ok1 := oldObj.(*corev1.Node)
			n, ok2 := newObj.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			s.cfg.Cache.SetNode(n)
			if schedulingChanged(oldNode, n) {
				s.cfg.Queue.MoveAllToActive()
			}
		},
		DeleteFunc: func(obj runtime.Object) {
			if n, ok := informer.DeletedObject(obj).(*corev1.Node); ok {
				s.cfg.Cache.RemoveNode(n.Name)
			}
		},
	}
}

// schedulingChanged ignores heartbeats: only what a filter reads counts.
func schedulingChanged(a, b *corev1.Node) bool {
	return a.Spec.Unschedulable != b.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(a.Labels, b.Labels) ||
		!equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
		!equality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) ||
		readyStatus(a) != readyStatus(b)
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
