package informer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/workqueue/clock"
)

// ListerWatcher is what an informer needs from the API: a typed list (such as *corev1.PodList)
// and a watch from a resourceVersion. The REST client provides it per resource.
type ListerWatcher interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ListWatchFuncs adapts two functions to a ListerWatcher.
type ListWatchFuncs struct {
	ListFunc  func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	WatchFunc func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func (f ListWatchFuncs) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return f.ListFunc(ctx, opts)
}

func (f ListWatchFuncs) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return f.WatchFunc(ctx, opts)
}

// Handler is told about changes to the store, one call at a time, in the order they happened.
// OnDelete may receive a *Tombstone when the deletion was noticed by a relist; use
// DeletedObject or KeyOf. Handlers must not block for long: they should queue keys.
type Handler interface {
	OnAdd(obj runtime.Object)
	OnUpdate(oldObj, newObj runtime.Object)
	OnDelete(obj runtime.Object)
}

// HandlerFuncs is a Handler from optional functions.
type HandlerFuncs struct {
	AddFunc    func(obj runtime.Object)
	UpdateFunc func(oldObj, newObj runtime.Object)
	DeleteFunc func(obj runtime.Object)
}

func (h HandlerFuncs) OnAdd(obj runtime.Object) {
	if h.AddFunc != nil {
		h.AddFunc(obj)
	}
}

func (h HandlerFuncs) OnUpdate(oldObj, newObj runtime.Object) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(oldObj, newObj)
	}
}

func (h HandlerFuncs) OnDelete(obj runtime.Object) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(obj)
	}
}

// Defaults for Config.
const (
	DefaultRelistPeriod = 5 * time.Minute
	DefaultMinBackoff   = 200 * time.Millisecond
	DefaultMaxBackoff   = 30 * time.Second
)

// Config describes one informer.
type Config struct {
	// Name labels log lines, e.g. "pods".
	Name          string
	ListerWatcher ListerWatcher
	// ListOptions narrows what is listed and watched (label and field selectors, e.g.
	// spec.nodeName=<node> for a kubelet). ResourceVersion and Watch are set by the informer.
	ListOptions metav1.ListOptions
	Indexers    Indexers
	// ResyncPeriod, when positive, replays every cached object to the handlers as
	// OnUpdate(obj, obj) so that controllers revisit everything now and then.
	ResyncPeriod time.Duration
	// NoWatch runs the informer without a watch: changes arrive through Apply (from the bus)
	// and the informer relists every RelistPeriod and on RequestRelist as a safety net.
	NoWatch      bool
	RelistPeriod time.Duration
	// FirstListWait, with NoWatch, lets the first list wait up to this long for RequestRelist.
	// A bus consumer requests a relist once its queue is bound (OnConnect); a list begun after
	// that misses no change, while one begun before it needs a second, which for thousands of
	// objects costs the apiserver and the informer more than the wait. 0 lists at once.
	FirstListWait time.Duration
	MinBackoff    time.Duration
	MaxBackoff    time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
	// OnList, when set, is told about every list: how many objects it stored, or why it failed.
	OnList func(objects int, err error)
}

// Informer keeps a Store in step with the API and calls handlers on changes. Build it with New,
// add handlers, run Start in a run group, and wait for HasSynced before trusting the cache.
type Informer struct {
	cfg   Config
	store *Store
	log   *slog.Logger

	// mu makes "change the store, queue its notifications" one step, so handlers see changes
	// in store order even when the watch and the bus apply events concurrently.
	mu       sync.Mutex
	handlers []Handler // replaced, never modified, so a notification can keep its own slice
	pending  []notification
	notify   chan struct{}

	relist  chan struct{}
	synced  atomic.Bool
	started atomic.Bool
}

type notification struct {
	deltas   []Delta
	handlers []Handler
	synced   bool // marks the end of the first list
}

// New returns an informer; it does nothing until Start.
func New(cfg Config) *Informer {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RelistPeriod <= 0 {
		cfg.RelistPeriod = DefaultRelistPeriod
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	return &Informer{
		cfg:    cfg,
		store:  NewStore(cfg.Indexers),
		log:    cfg.Logger.With("informer", cfg.Name),
		notify: make(chan struct{}, 1),
		relist: make(chan struct{}, 1),
	}
}

// Store is the informer's cache.
func (i *Informer) Store() *Store { return i.store }

// HasSynced reports whether the first list has been stored and handed to the handlers.
func (i *Informer) HasSynced() bool { return i.synced.Load() }

// AddEventHandler registers h. Added after objects are cached, h first gets OnAdd for each of
// them, then later changes, like a handler that was there from the start.
func (i *Informer) AddEventHandler(h Handler) {
	i.mu.Lock()
	defer i.mu.Unlock()
	hs := make([]Handler, 0, len(i.handlers)+1)
	hs = append(append(hs, i.handlers...), h)
	i.handlers = hs
	objs := i.store.List()
	if len(objs) == 0 {
		return
	}
	deltas := make([]Delta, len(objs))
	for n, obj := range objs {
		deltas[n] = Delta{Type: Added, New: obj}
	}
	i.queueLocked(notification{deltas: deltas, handlers: []Handler{h}})
}

// Apply feeds one event (from the bus) into the cache and, if it changed it, to the handlers.
// Stale events are dropped. It reports whether the cache changed.
func (i *Informer) Apply(eventType watch.EventType, obj runtime.Object) (bool, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	d, changed, err := i.store.Apply(eventType, obj)
	if err != nil || !changed {
		return false, err
	}
	i.queueLocked(notification{deltas: []Delta{d}, handlers: i.handlers})
	return true, nil
}

// RequestRelist asks for a relist soon, e.g. after the bus reconnected and may have lost
// messages. It never blocks.
func (i *Informer) RequestRelist() {
	select {
	case i.relist <- struct{}{}:
	default:
	}
}

func (i *Informer) queueLocked(n notification) {
	i.pending = append(i.pending, n)
	select {
	case i.notify <- struct{}{}:
	default:
	}
}

// Start lists, watches (or waits for relists) and dispatches to handlers until ctx is done.
// Failures are retried with backoff, so it returns only when ctx ends.
func (i *Informer) Start(ctx context.Context) error {
	if !i.started.CompareAndSwap(false, true) {
		return errors.New("informer already started")
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		i.dispatch(ctx)
	}()
	if i.cfg.ResyncPeriod > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i.resyncLoop(ctx)
		}()
	}
	i.reflect(ctx)
	wg.Wait()
	return nil
}

// reflect is the list/watch loop.
func (i *Informer) reflect(ctx context.Context) {
	if i.cfg.NoWatch && i.cfg.FirstListWait > 0 && !i.sleep(ctx, i.cfg.FirstListWait, true) {
		return
	}
	failures := 0
	for ctx.Err() == nil {
		if failures > 0 && !i.sleep(ctx, i.backoff(failures), false) {
			return
		}
		rv, err := i.list(ctx)
		if err != nil {
			if ctx.Err() == nil {
				failures++
				i.log.Warn("list failed", "err", err, "attempt", failures)
			}
			continue
		}
		if i.cfg.NoWatch {
			failures = 0
			i.sleep(ctx, i.cfg.RelistPeriod, true)
			continue
		}
		progressed, err := i.watch(ctx, rv)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, apierror.ErrGone):
			i.log.Info("watch expired, relisting", "resourceVersion", rv)
		case err != nil:
			i.log.Warn("watch failed, relisting", "err", err)
		default:
			i.log.Debug("watch ended, relisting")
		}
		// A watch that delivered something proves the connection works: relist at once.
		// One that failed or closed straight away backs off, so a broken server is not
		// hammered.
		if progressed {
			failures = 0
		} else {
			failures++
		}
	}
}

func (i *Informer) list(ctx context.Context) (string, error) {
	// A relist requested before this list begins is answered by it.
	select {
	case <-i.relist:
	default:
	}
	opts := i.cfg.ListOptions
	opts.ResourceVersion, opts.Watch = "", false
	list, err := i.cfg.ListerWatcher.List(ctx, opts)
	if err != nil {
		if i.cfg.OnList != nil && ctx.Err() == nil {
			i.cfg.OnList(0, err)
		}
		return "", fmt.Errorf("list %s: %w", i.cfg.Name, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", i.cfg.Name, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return "", fmt.Errorf("list %s: %w", i.cfg.Name, err)
	}
	rv := lm.GetResourceVersion()

	i.mu.Lock()
	defer i.mu.Unlock()
	deltas, err := i.store.Replace(items, rv)
	if len(deltas) > 0 {
		i.queueLocked(notification{deltas: deltas, handlers: i.handlers})
	}
	if err != nil {
		return "", fmt.Errorf("list %s: %w", i.cfg.Name, err)
	}
	if !i.synced.Load() {
		i.queueLocked(notification{synced: true})
	}
	if i.cfg.OnList != nil {
		i.cfg.OnList(len(items), nil)
	}
	i.log.Debug("listed", "items", len(items), "resourceVersion", rv)
	return rv, nil
}

// watch applies events until the watch ends, fails, expires or a relist is requested. It
// reports whether any event arrived.
func (i *Informer) watch(ctx context.Context, rv string) (progressed bool, err error) {
	opts := i.cfg.ListOptions
	opts.ResourceVersion, opts.Watch, opts.AllowWatchBookmarks = rv, true, true
	w, err := i.cfg.ListerWatcher.Watch(ctx, opts)
	if err != nil {
		return false, fmt.Errorf("watch %s: %w", i.cfg.Name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return progressed, nil
		case <-i.relist:
			return true, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return progressed, nil
			}
			switch ev.Type {
			case watch.Error:
				return progressed, watchError(ev.Object)
			case watch.Bookmark:
				progressed = true
			case watch.Added, watch.Modified, watch.Deleted:
				progressed = true
				if _, err := i.Apply(ev.Type, ev.Object); err != nil {
					// One undecodable object must not stall the others; the next relist
					// retries it.
					i.log.Warn("dropping watch event", "type", ev.Type, "err", err)
				}
			}
		}
	}
}

// watchError turns a watch ERROR event into an error; a 410 matches apierror.ErrGone.
func watchError(obj runtime.Object) error {
	status, ok := obj.(*metav1.Status)
	if !ok {
		return fmt.Errorf("watch error event carrying %T", obj)
	}
	if status.Code == http.StatusGone || status.Reason == metav1.StatusReasonExpired || status.Reason == metav1.StatusReasonGone {
		return apierror.New(apierror.ErrGone, "%s", status.Message)
	}
	return apierror.FromStatus(status)
}

func (i *Informer) backoff(failures int) time.Duration {
	d := i.cfg.MinBackoff
	for n := 1; n < failures && d < i.cfg.MaxBackoff; n++ {
		d *= 2
	}
	d = min(d, i.cfg.MaxBackoff)
	// Jitter keeps many informers from relisting in lockstep after an apiserver restart.
	return d + rand.N(d/4+1)
}

// sleep waits d on the informer's clock. With wakeOnRelist, RequestRelist ends it early. It
// returns false when ctx ended.
func (i *Informer) sleep(ctx context.Context, d time.Duration, wakeOnRelist bool) bool {
	t := i.cfg.Clock.NewTimer(d)
	defer t.Stop()
	var relist <-chan struct{}
	if wakeOnRelist {
		relist = i.relist
	}
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
	case <-relist:
	}
	return true
}

func (i *Informer) resyncLoop(ctx context.Context) {
	for i.sleep(ctx, i.cfg.ResyncPeriod, false) {
		i.mu.Lock()
		objs := i.store.List()
		if len(objs) > 0 {
			deltas := make([]Delta, len(objs))
			for n, obj := range objs {
				deltas[n] = Delta{Type: Sync, Old: obj, New: obj}
			}
			i.queueLocked(notification{deltas: deltas, handlers: i.handlers})
		}
		i.mu.Unlock()
	}
}

// dispatch is the one goroutine that calls handlers.
func (i *Informer) dispatch(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-i.notify:
		}
		i.mu.Lock()
		batch := i.pending
		i.pending = nil
		i.mu.Unlock()
		for _, n := range batch {
			if ctx.Err() != nil {
				return
			}
			if n.synced {
				i.synced.Store(true)
				continue
			}
			for _, d := range n.deltas {
				for _, h := range n.handlers {
					switch d.Type {
					case Added:
						h.OnAdd(d.New)
					case Updated, Sync:
						h.OnUpdate(d.Old, d.New)
					case Deleted:
						h.OnDelete(d.Old)
					}
				}
			}
		}
	}
}

// WaitForSync waits until every synced func reports true or ctx ends; it reports whether
// they all did.
func WaitForSync(ctx context.Context, synced ...func() bool) bool {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		all := true
		for _, f := range synced {
			all = all && f()
		}
		if all {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
