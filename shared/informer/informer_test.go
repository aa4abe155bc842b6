package informer

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/testwait"
	"minik8s.io/shared/workqueue/clock"
)

// fakeLW serves the list the test sets and hands every watch it opens to the test.
type fakeLW struct {
	mu        sync.Mutex
	list      *corev1.PodList
	listCalls int
	watchErr  error // returned once by the next Watch
	watches   chan openedWatch
}

type openedWatch struct {
	opts metav1.ListOptions
	w    *watch.FakeWatcher
}

func newFakeLW(rv string, pods ...*corev1.Pod) *fakeLW {
	lw := &fakeLW{watches: make(chan openedWatch, 10)}
	lw.setList(rv, pods...)
	return lw
}

func (f *fakeLW) setList(rv string, pods ...*corev1.Pod) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		l.Items = append(l.Items, *p)
	}
	f.list = l
}

func (f *fakeLW) lists() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listCalls
}

func (f *fakeLW) List(_ context.Context, _ metav1.ListOptions) (runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	return f.list.DeepCopy(), nil
}

func (f *fakeLW) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	err := f.watchErr
	f.watchErr = nil
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	w := watch.NewFakeWithChanSize(100, false)
	f.watches <- openedWatch{opts: opts, w: w}
	return w, nil
}

func (f *fakeLW) nextWatch(t *testing.T) openedWatch {
	t.Helper()
	select {
	case ow := <-f.watches:
		return ow
	case <-time.After(10 * time.Second):
		t.Fatal("informer opened no watch")
		return openedWatch{}
	}
}

// recorder is a Handler that writes down what it is told.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) OnAdd(obj runtime.Object) { r.add(describe(Delta{Type: Added, New: obj})) }
func (r *recorder) OnUpdate(o, n runtime.Object) {
	if o == n {
		k, _ := KeyOf(n)
		r.add("sync " + k)
		return
	}
	r.add(describe(Delta{Type: Updated, Old: o, New: n}))
}
func (r *recorder) OnDelete(obj runtime.Object) { r.add(describe(Delta{Type: Deleted, Old: obj})) }

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

// take waits for n events and returns them, clearing the record.
func (r *recorder) take(t *testing.T, n int) []string {
	t.Helper()
	testwait.For(t, fmt.Sprintf("%d handler calls", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.events) >= n
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// start runs inf until the test ends and checks that Start returned.
func start(t *testing.T, inf *Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Start returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Start did not return after cancel")
		}
	})
}

func diffEvents(t *testing.T, want, got []string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
}

func TestListThenWatch(t *testing.T) {
	lw := newFakeLW("10", pod("ns", "a", "5", ""), pod("ns", "b", "6", ""))
	inf := New(Config{Name: "pods", ListerWatcher: lw, ListOptions: metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}})
	rec := &recorder{}
	inf.AddEventHandler(rec)
	start(t, inf)

	diffEvents(t, []string{"add ns/a@5", "add ns/b@6"}, rec.take(t, 2))
	testwait.For(t, "HasSynced", inf.HasSynced)
	ow := lw.nextWatch(t)
	wantOpts := metav1.ListOptions{FieldSelector: "spec.nodeName=n1", ResourceVersion: "10", Watch: true, AllowWatchBookmarks: true}
	if diff := cmp.Diff(wantOpts, ow.opts); diff != "" {
		t.Errorf("watch options (-want +got):\n%s", diff)
	}

	ow.w.Modify(pod("ns", "a", "9", ""))  // older than the list: dropped
	ow.w.Modify(pod("ns", "a", "11", "")) // applied
	ow.w.Modify(pod("ns", "a", "11", "")) // duplicate: dropped
	ow.w.Action(watch.Bookmark, pod("", "", "12", ""))
	ow.w.Delete(pod("ns", "b", "13", ""))
	ow.w.Add(pod("ns", "c", "14", ""))
	diffEvents(t, []string{"update ns/a@5->11", "delete ns/b@13", "add ns/c@14"}, rec.take(t, 3))
	if got := inf.Store().ListKeys(); !cmp.Equal(got, []string{"ns/a", "ns/c"}) {
		t.Errorf("store keys = %v", got)
	}
	if lw.lists() != 1 {
		t.Errorf("lists = %d, want 1 (no relist while the watch is healthy)", lw.lists())
	}
}

func TestRelist(t *testing.T) {
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	tests := []struct {
		name string
		end  func(ow openedWatch)
	}{
		{"watch expires with 410", func(ow openedWatch) { ow.w.Error(gone) }},
		{"watch closes", func(ow openedWatch) { ow.w.Stop() }},
		{"watch fails with another error", func(ow openedWatch) {
			ow.w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lw := newFakeLW("10", pod("ns", "a", "5", ""), pod("ns", "b", "6", ""))
			inf := New(Config{Name: "pods", ListerWatcher: lw, MinBackoff: time.Millisecond})
			rec := &recorder{}
			inf.AddEventHandler(rec)
			start(t, inf)
			rec.take(t, 2)
			ow := lw.nextWatch(t)
			ow.w.Add(pod("ns", "c", "11", ""))
			rec.take(t, 1)

			// While nobody watched, b was deleted, c changed and d was created.
			lw.setList("20", pod("ns", "a", "5", ""), pod("ns", "c", "15", ""), pod("ns", "d", "16", ""))
			tt.end(ow)
			diffEvents(t, []string{"update ns/c@11->15", "add ns/d@16", "delete ns/b@tombstone@6"}, rec.take(t, 3))
			next := lw.nextWatch(t)
			if next.opts.ResourceVersion != "20" {
				t.Errorf("rewatch from %q, want the new list's 20", next.opts.ResourceVersion)
			}
			if lw.lists() != 2 {
				t.Errorf("lists = %d, want 2", lw.lists())
			}
		})
	}
}

func TestWatchCallGoneRelists(t *testing.T) {
	lw := newFakeLW("10", pod("ns", "a", "5", ""))
	lw.watchErr = fmt.Errorf("open watch: %w", apierror.New(apierror.ErrGone, "expired"))
	inf := New(Config{Name: "pods", ListerWatcher: lw, MinBackoff: time.Millisecond})
	start(t, inf)
	lw.nextWatch(t)
	if lw.lists() != 2 {
		t.Errorf("lists = %d, want 2: one before the failed watch, one after", lw.lists())
	}
}

func TestBusModeAppliesAndRelistsOnRequest(t *testing.T) {
	lw := newFakeLW("10", pod("ns", "a", "5", ""))
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	inf := New(Config{Name: "pods", ListerWatcher: lw, NoWatch: true, RelistPeriod: time.Minute, Clock: fc})
	rec := &recorder{}
	inf.AddEventHandler(rec)
	start(t, inf)
	rec.take(t, 1)
	testwait.For(t, "HasSynced", inf.HasSynced)

	tests := []struct {
		typ     watch.EventType
		obj     *corev1.Pod
		changed bool
	}{
		{watch.Added, pod("ns", "b", "11", ""), true},
		{watch.Modified, pod("ns", "b", "12", ""), true},
		{watch.Modified, pod("ns", "b", "11", ""), false}, // redelivered old message
		{watch.Modified, pod("ns", "a", "9", ""), false},  // covered by the list
		{watch.Deleted, pod("ns", "a", "13", ""), true},
	}
	for _, tt := range tests {
		changed, err := inf.Apply(tt.typ, tt.obj)
		if err != nil || changed != tt.changed {
			t.Errorf("Apply(%s %s@%s) = %v, %v; want %v", tt.typ, tt.obj.Name, tt.obj.ResourceVersion, changed, err, tt.changed)
		}
	}
	diffEvents(t, []string{"add ns/b@11", "update ns/b@11->12", "delete ns/a@13"}, rec.take(t, 3))

	// A lost message: e was created but its event never arrived. The relist finds it.
	lw.setList("20", pod("ns", "b", "12", ""), pod("ns", "e", "19", ""))
	inf.RequestRelist()
	diffEvents(t, []string{"add ns/e@19"}, rec.take(t, 1))

	// And the periodic relist runs on the clock.
	lw.setList("30", pod("ns", "b", "12", ""))
	testwait.For(t, "relist timer", func() bool { return fc.Waiters() > 0 })
	fc.Step(time.Minute)
	diffEvents(t, []string{"delete ns/e@tombstone@19"}, rec.take(t, 1))
	select {
	case ow := <-lw.watches:
		t.Errorf("bus-mode informer opened a watch: %+v", ow.opts)
	default:
	}
}

// With FirstListWait the first list waits for the bus's relist request and answers it: one
// list at start, not two; without a request it lists once the wait is over.
func TestFirstListWaitsForTheBus(t *testing.T) {
	// started runs a bus-mode informer whose first list waits up to 10 s, once it waits.
	started := func(t *testing.T) (*fakeLW, *clock.Fake, *Informer) {
		lw := newFakeLW("10", pod("ns", "a", "5", ""))
		fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
		inf := New(Config{Name: "pods", ListerWatcher: lw, NoWatch: true, RelistPeriod: time.Minute,
			FirstListWait: 10 * time.Second, Clock: fc})
		start(t, inf)
		testwait.For(t, "waiting for the first list", func() bool { return fc.Waiters() > 0 })
		return lw, fc, inf
	}
	t.Run("request", func(t *testing.T) {
		lw, fc, inf := started(t)
		if n := lw.lists(); n != 0 {
			t.Fatalf("listed %d times before the bus asked", n)
		}
		inf.RequestRelist()
		testwait.For(t, "HasSynced", inf.HasSynced)
		// The informer is back asleep until the periodic relist: nothing else listed.
		testwait.For(t, "relist timer", func() bool { return fc.Waiters() > 0 })
		if n := lw.lists(); n != 1 {
			t.Errorf("lists after the bus's request = %d, want 1", n)
		}
		fc.Step(time.Minute)
		testwait.For(t, "periodic relist", func() bool { return lw.lists() == 2 })
	})
	t.Run("no request", func(t *testing.T) {
		_, fc, inf := started(t)
		fc.Step(10 * time.Second)
		testwait.For(t, "HasSynced without the bus", inf.HasSynced)
	})
}

// A relist requested while a list is still to begin is answered by that list.
func TestRelistRequestBeforeAListIsAnsweredByIt(t *testing.T) {
	lw := newFakeLW("10", pod("ns", "a", "5", ""))
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	inf := New(Config{Name: "pods", ListerWatcher: lw, NoWatch: true, RelistPeriod: time.Minute, Clock: fc})
	inf.RequestRelist() // before Start: the first list covers it
	start(t, inf)
	testwait.For(t, "HasSynced", inf.HasSynced)
	testwait.For(t, "relist timer", func() bool { return fc.Waiters() > 0 })
	if n := lw.lists(); n != 1 {
		t.Errorf("lists = %d, want 1", n)
	}
}

// A relist requested while a list is under way is not answered by it (the list may have read
// the store before the change the request is about): another list follows.
func TestRelistRequestDuringAListListsAgain(t *testing.T) {
	entered, release := make(chan struct{}, 4), make(chan struct{})
	var mu sync.Mutex
	calls := 0
	lw := ListWatchFuncs{ListFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		entered <- struct{}{}
		if first {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "10"}}, nil
	}}
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	inf := New(Config{Name: "pods", ListerWatcher: lw, NoWatch: true, RelistPeriod: time.Hour, Clock: fc})
	start(t, inf)
	<-entered // the first list has begun
	inf.RequestRelist()
	close(release)
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("a relist requested during a list was lost: no second list")
	}
}

func TestResyncAndLateHandler(t *testing.T) {
	lw := newFakeLW("10", pod("ns", "a", "5", ""))
	fc := clock.NewFake(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	inf := New(Config{Name: "pods", ListerWatcher: lw, ResyncPeriod: time.Hour, Clock: fc})
	first := &recorder{}
	inf.AddEventHandler(first)
	start(t, inf)
	diffEvents(t, []string{"add ns/a@5"}, first.take(t, 1))
	ow := lw.nextWatch(t)

	late := &recorder{}
	inf.AddEventHandler(late)
	ow.w.Add(pod("ns", "b", "11", ""))
	diffEvents(t, []string{"add ns/a@5", "add ns/b@11"}, late.take(t, 2))
	diffEvents(t, []string{"add ns/b@11"}, first.take(t, 1))

	testwait.For(t, "resync timer", func() bool { return fc.Waiters() > 0 })
	fc.Step(time.Hour)
	for _, r := range []*recorder{first, late} {
		got := r.take(t, 2)
		if diff := cmp.Diff([]string{"sync ns/a", "sync ns/b"}, got, cmpSorted); diff != "" {
			t.Errorf("resync calls (-want +got):\n%s", diff)
		}
	}
}

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

func TestWaitForSync(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if WaitForSync(ctx, func() bool { return false }) {
		t.Error("WaitForSync = true for a never-synced func and a cancelled ctx")
	}
	if !WaitForSync(context.Background(), func() bool { return true }) {
		t.Error("WaitForSync = false for synced funcs")
	}
}

func TestStartTwice(t *testing.T) {
	inf := New(Config{ListerWatcher: newFakeLW("1")})
	start(t, inf)
	testwait.For(t, "first Start", func() bool { return inf.started.Load() })
	if err := inf.Start(context.Background()); err == nil {
		t.Error("second Start: want an error")
	}
}
