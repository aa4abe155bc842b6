package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue"
	"minik8s.io/shared/workqueue/clock"
)

// Sink is where Events go: the REST client's events endpoint in production.
type Sink interface {
	Create(ctx context.Context, namespace string, ev *corev1.Event) (*corev1.Event, error)
	// Patch applies a JSON merge patch to the named Event.
	Patch(ctx context.Context, namespace, name string, mergePatch []byte) (*corev1.Event, error)
}

// Defaults for Config.
const (
	DefaultBufferSize   = 1000
	DefaultCacheSize    = 4096
	DefaultWriteTimeout = 10 * time.Second
	// drainTimeout bounds how long Start keeps writing buffered events after ctx ends.
	drainTimeout = 5 * time.Second
	maxAttempts  = 3
)

// Config describes the component that reports events.
type Config struct {
	// Component and Host fill the Event's source, e.g. "scheduler" and the node or host name.
	Component string
	Host      string
	Sink      Sink
	// BufferSize bounds events waiting to be written; more are dropped.
	BufferSize int
	// CacheSize bounds how many distinct events are remembered for aggregation.
	CacheSize    int
	WriteTimeout time.Duration
	// QPS and Burst, when QPS > 0, bound how fast events are written (a token bucket), as
	// Kubernetes components throttle their event client: a component that reports one event
	// per object (the scheduler's Scheduled) must not double the load on the store when
	// thousands of objects change at once. Events beyond the buffer while it waits are
	// dropped and counted, as Kubernetes' broadcaster drops them.
	QPS    float64
	Burst  int
	Clock  clock.Clock
	Logger *slog.Logger
}

// EventRecorder reports events about objects: Recorder and Fake implement it, and a component
// part that reports events takes one, so its tests can pass a Fake.
type EventRecorder interface {
	Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any)
}

var (
	_ EventRecorder = (*Recorder)(nil)
	_ EventRecorder = (*Fake)(nil)
)

// Recorder turns Eventf calls into Events. Build with New and run Start in the run group.
type Recorder struct {
	cfg      Config
	log      *slog.Logger
	queue    chan *corev1.Event
	dropped  atomic.Uint64
	lastNano atomic.Int64
	cache    *lru // used only by the writer goroutine
	limiter  *workqueue.Bucket[struct{}]
}

// New returns a recorder; events are buffered until Start runs.
func New(cfg Config) *Recorder {
	if cfg.BufferSize <= 0 {
		cfg.BufferSize = DefaultBufferSize
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Recorder{
		cfg:   cfg,
		log:   cfg.Logger,
		queue: make(chan *corev1.Event, cfg.BufferSize),
		cache: newLRU(cfg.CacheSize),
	}
	if cfg.QPS > 0 {
		r.limiter = workqueue.NewBucket[struct{}](cfg.QPS, max(cfg.Burst, 1), cfg.Clock)
	}
	return r
}

// throttle waits for the rate limit, if any; false means ctx ended first.
func (r *Recorder) throttle(ctx context.Context) bool {
	if r.limiter == nil {
		return true
	}
	d := r.limiter.When(struct{}{})
	if d <= 0 {
		return true
	}
	t := r.cfg.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// Dropped is how many events were lost because the buffer was full or they could not be
// written.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

// Event records an event with a fixed message.
func (r *Recorder) Event(obj runtime.Object, eventType, reason, message string) {
	if r.full() {
		return
	}
	r.record(obj, eventType, reason, message)
}

// full drops an event at once when the buffer has no room, before it is formatted: a
// throttled component (the scheduler reports each of a thousand bindings a second and writes
// fifty) would otherwise build every event only to drop it. record checks again, since the
// buffer may fill in between.
func (r *Recorder) full() bool {
	if len(r.queue) < cap(r.queue) {
		return false
	}
	r.dropped.Add(1)
	return true
}

// Eventf records an event about obj. eventType is corev1.EventTypeNormal or
// corev1.EventTypeWarning; reason is a short UpperCamelCase word. It never blocks.
func (r *Recorder) Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any) {
	if r.full() {
		return
	}
	r.record(obj, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

func (r *Recorder) record(obj runtime.Object, eventType, reason, message string) {
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		r.log.Error("event with unsupported type dropped", "type", eventType, "reason", reason)
		return
	}
	ref, err := Reference(obj)
	if err != nil {
		r.log.Error("event about an object without a reference dropped", "reason", reason, "err", err)
		return
	}
	now := metav1.NewTime(r.cfg.Clock.Now())
	nano := r.uniqueNano(now.UnixNano())
	ns := ref.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // where Kubernetes files events about cluster-scoped objects
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", ref.Name, nano),
			Namespace: ns,
		},
		InvolvedObject:      *ref,
		Reason:              reason,
		Message:             message,
		Type:                eventType,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              corev1.EventSource{Component: r.cfg.Component, Host: r.cfg.Host},
		ReportingController: r.cfg.Component,
		ReportingInstance:   r.cfg.Host,
	}
	select {
	case r.queue <- ev:
		r.log.Debug("event", "object", ref.Kind+"/"+ref.Name, "type", eventType, "reason", reason, "message", message)
	default:
		r.dropped.Add(1)
	}
}

// uniqueNano keeps Event names unique when two events share a clock reading: it never returns
// the same value twice.
func (r *Recorder) uniqueNano(n int64) int64 {
	for {
		last := r.lastNano.Load()
		if n <= last {
			n = last + 1
		}
		if r.lastNano.CompareAndSwap(last, n) {
			return n
		}
	}
}

// Reference builds an ObjectReference to obj, looking its kind up in the scheme when the
// object's TypeMeta is empty (as it is for objects decoded by typed clients).
func Reference(obj runtime.Object) (*corev1.ObjectReference, error) {
	if obj == nil {
		return nil, errors.New("nil object")
	}
	if ref, ok := obj.(*corev1.ObjectReference); ok {
		return ref.DeepCopy(), nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return nil, fmt.Errorf("reference to %T: %w", obj, err)
		}
		gvk = kinds[0]
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return &corev1.ObjectReference{
		Kind:            kind,
		APIVersion:      apiVersion,
		Namespace:       m.GetNamespace(),
		Name:            m.GetName(),
		UID:             m.GetUID(),
		ResourceVersion: m.GetResourceVersion(),
	}, nil
}

// Start writes buffered events until ctx ends, then keeps writing what is already buffered
// for a few seconds so the last events of a shutting-down component are not lost.
func (r *Recorder) Start(ctx context.Context) error {
	for {
		select {
		case ev := <-r.queue:
			if ctx.Err() != nil || !r.throttle(ctx) {
				r.drain(ctx, ev)
				return nil
			}
			r.write(ctx, ev)
		case <-ctx.Done():
			r.drain(ctx, nil)
			return nil
		}
	}
}

// drain writes first (if any) and whatever is buffered, on a context of its own: the
// component's ctx is already done.
func (r *Recorder) drain(ctx context.Context, first *corev1.Event) {
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer cancel()
	if first != nil {
		r.write(drainCtx, first)
	}
	for {
		select {
		case ev := <-r.queue:
			r.write(drainCtx, ev)
		default:
			return
		}
	}
}

// aggregateKey identifies "the same event": same source, object, type, reason and message.
type aggregateKey struct {
	component, host                    string
	kind, apiVersion, namespace, name  string
	uid                                string
	eventType, reason, message, target string
}

type aggregate struct {
	name      string
	namespace string
	count     int32
	first     metav1.Time
}

func keyOf(ev *corev1.Event) aggregateKey {
	o := ev.InvolvedObject
	return aggregateKey{
		component: ev.Source.Component, host: ev.Source.Host,
		kind: o.Kind, apiVersion: o.APIVersion, namespace: o.Namespace, name: o.Name, uid: string(o.UID),
		eventType: ev.Type, reason: ev.Reason, message: ev.Message, target: ev.Namespace,
	}
}

func (r *Recorder) write(ctx context.Context, ev *corev1.Event) {
	key := keyOf(ev)
	prev, repeat := r.cache.get(key)
	if repeat {
		ev.Name = prev.name
		ev.Count = prev.count + 1
		ev.FirstTimestamp = prev.first
	}
	var saved *corev1.Event
	var err error
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		saved, err = r.send(ctx, ev, repeat)
		if err == nil || !retriable(err) || attempt == maxAttempts {
			break
		}
		wait := time.Duration(attempt) * 100 * time.Millisecond
		wait += rand.N(wait / 2)
		select {
		case <-ctx.Done():
		case <-r.cfg.Clock.After(wait):
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		r.dropped.Add(1)
		r.log.Warn("event not written", "object", ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name, "reason", ev.Reason, "err", err)
		return
	}
	agg := aggregate{name: saved.Name, namespace: saved.Namespace, count: saved.Count, first: saved.FirstTimestamp}
	if agg.count == 0 {
		agg.count = ev.Count
	}
	if agg.first.IsZero() {
		agg.first = ev.FirstTimestamp
	}
	r.cache.put(key, agg)
}

// send patches the aggregated Event when this is a repeat, and creates it otherwise or when
// the Event to patch is gone (Events expire on the server).
func (r *Recorder) send(ctx context.Context, ev *corev1.Event, repeat bool) (*corev1.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.WriteTimeout)
	defer cancel()
	if repeat {
		patch, err := json.Marshal(struct {
			Count         int32       `json:"count"`
			LastTimestamp metav1.Time `json:"lastTimestamp"`
			Message       string      `json:"message"`
		}{ev.Count, ev.LastTimestamp, ev.Message})
		if err != nil {
			return nil, fmt.Errorf("patch event %s: %w", ev.Name, err)
		}
		saved, err := r.cfg.Sink.Patch(ctx, ev.Namespace, ev.Name, patch)
		if err == nil {
			return saved, nil
		}
		if !errors.Is(err, apierror.ErrNotFound) {
			return nil, fmt.Errorf("patch event %s/%s: %w", ev.Namespace, ev.Name, err)
		}
	}
	saved, err := r.cfg.Sink.Create(ctx, ev.Namespace, ev)
	if err != nil {
		return nil, fmt.Errorf("create event %s/%s: %w", ev.Namespace, ev.Name, err)
	}
	return saved, nil
}

// retriable is false for errors a retry cannot fix.
func retriable(err error) bool {
	for _, permanent := range []error{apierror.ErrInvalid, apierror.ErrAlreadyExists, apierror.ErrBadRequest,
		apierror.ErrForbidden, apierror.ErrUnauthorized, apierror.ErrRequestTooLarge, context.Canceled} {
		if errors.Is(err, permanent) {
			return false
		}
	}
	return true
}
