package outbox

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/apiserver/internal/storage/etcdstore/etcdtest"
	"minik8s.io/shared/bus/membus"
	"minik8s.io/shared/testwait"
)

const (
	podKey = "/registry/pods/default/web"
	pod    = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`
	bound  = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default"},"spec":{"nodeName":"node.a","containers":[{"name":"c","image":"nginx"}]}}`
)

func TestPublishesEveryChangeInOrder(t *testing.T) {
	c := etcdtest.Start(t).Client
	b := membus.New(nil)
	got := &collector{}
	consume(t, b, "all", got)
	o := newOutbox(t, c, b)
	run(t, o)

	w := newWriter(t, c)
	w.put(podKey, pod)
	w.put(podKey, bound)
	w.put("/registry/deployments/default/d", `{"kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"replicas":3}}`)
	w.put("/registry/nodes/node.a", `{"kind":"Node","metadata":{"name":"node.a"}}`)
	if _, err := c.Put(t.Context(), "/elsewhere/x", "{}"); err != nil { // outside the prefix: not published
		t.Fatal(err)
	}
	w.putBoth("/registry/configmaps/default/a", `{"kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"1"}}`,
		"/registry/configmaps/default/b", `{"kind":"ConfigMap","metadata":{"name":"b"}}`)
	w.del(podKey)
	last := w.put("/registry/deployments/default/d", `{"kind":"Deployment","metadata":{"name":"d","namespace":"default"},"spec":{"replicas":4}}`)

	waitChanges(t, got, w.want)
	if n := len(got.snapshot()); n != len(w.want) {
		t.Errorf("%d deliveries for %d changes; no duplicates expected without failures", n, len(w.want))
	}
	testwait.For(t, "stored revision to reach the last change", func() bool {
		rev, err := o.Revision(t.Context())
		return err == nil && rev >= last
	})
	if v := testutil.ToFloat64(o.metrics.published); v != float64(len(w.want)) {
		t.Errorf("published_total = %v, want %d", v, len(w.want))
	}
}

func TestRepublishesAfterPublishFailures(t *testing.T) {
	c := etcdtest.Start(t).Client
	b := membus.New(nil)
	got := &collector{}
	consume(t, b, "all", got)
	o := newOutbox(t, c, b)
	run(t, o)
	w := newWriter(t, c)
	w.put(podKey, pod)
	waitChanges(t, got, w.want)

	b.FailPublish(errors.New("broker down"))
	w.put(podKey, bound)
	w.put("/registry/nodes/node.a", `{"kind":"Node","metadata":{"name":"node.a"}}`)
	testwait.For(t, "publish errors while the broker is down", func() bool { return testutil.ToFloat64(o.metrics.errors) >= 2 })
	w.del(podKey)
	b.FailPublish(nil)

	waitChanges(t, got, w.want)
	if n := len(got.snapshot()); n != len(w.want) {
		t.Errorf("%d deliveries for %d changes: a failed publish was delivered anyway", n, len(w.want))
	}
}

func TestResumesFromStoredRevision(t *testing.T) {
	c := etcdtest.Start(t).Client
	b := membus.New(nil)
	got := &collector{}
	consume(t, b, "all", got)
	w := newWriter(t, c)

	first := newOutbox(t, c, b)
	stop := run(t, first)
	w.put(podKey, pod)
	w.put(podKey, bound)
	waitChanges(t, got, w.want)
	stop()
	stored, err := first.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	// Written while no outbox runs: must be published by the next one.
	w.put("/registry/nodes/node.a", `{"kind":"Node","metadata":{"name":"node.a"}}`)
	w.del(podKey)
	run(t, newOutbox(t, c, b))
	waitChanges(t, got, w.want)

	// Only changes after the stored revision may be published twice.
	seen := map[string]int{}
	for _, ch := range got.snapshot() {
		seen[ch.ID]++
	}
	for _, ch := range w.want {
		if revOf(t, ch.ID) <= stored && seen[ch.ID] != 1 {
			t.Errorf("%s delivered %d times although it was at or before the stored revision %d", ch.ID, seen[ch.ID], stored)
		}
	}
	if stored < revOf(t, w.want[1].ID) {
		t.Errorf("stored revision %d after a clean stop, want at least %s's", stored, w.want[1].ID)
	}
}

func TestResumesAfterCompaction(t *testing.T) {
	c := etcdtest.Start(t).Client
	b := membus.New(nil)
	got := &collector{}
	consume(t, b, "all", got)
	w := newWriter(t, c)

	stop := run(t, newOutbox(t, c, b))
	w.put(podKey, pod)
	waitChanges(t, got, w.want)
	stop()

	w.put(podKey, bound)
	rev := w.put("/registry/nodes/node.a", `{"kind":"Node","metadata":{"name":"node.a"}}`)
	if _, err := c.Compact(t.Context(), rev); err != nil {
		t.Fatal(err)
	}
	w.del(podKey)

	o := newOutbox(t, c, b)
	run(t, o)
	// The bind at rev-1 is lost for good; the node (at the compaction
	// revision) and the delete are still published.
	want := append(w.want[:1:1], w.want[2:]...)
	waitChanges(t, got, want)
	if v := testutil.ToFloat64(o.metrics.compacted); v != 1 {
		t.Errorf("compacted_total = %v, want 1", v)
	}
}

func TestOnlyTheLeaderPublishes(t *testing.T) {
	c := etcdtest.Start(t).Client
	b := membus.New(nil)
	got := &collector{}
	consume(t, b, "all", got)
	w := newWriter(t, c)

	a, z := newOutbox(t, c, b), newOutbox(t, c, b)
	stopA, stopZ := run(t, a), run(t, z)
	leaders := func() float64 { return testutil.ToFloat64(a.metrics.leader) + testutil.ToFloat64(z.metrics.leader) }
	testwait.For(t, "a leader", func() bool { return leaders() == 1 })
	for i := range 10 {
		w.put("/registry/configmaps/default/c"+itoa(int64(i)), `{"kind":"ConfigMap","metadata":{"name":"c"}}`)
	}
	waitChanges(t, got, w.want)
	if leaders() != 1 {
		t.Fatalf("%v leaders, want 1", leaders())
	}

	leader, other := stopA, z
	if testutil.ToFloat64(z.metrics.leader) == 1 {
		leader, other = stopZ, a
	}
	leader()
	testwait.For(t, "the other outbox to take over", func() bool { return testutil.ToFloat64(other.metrics.leader) == 1 })
	for i := range 5 {
		w.put("/registry/configmaps/default/c"+itoa(int64(i)), `{"kind":"ConfigMap","metadata":{"name":"c2"}}`)
	}
	waitChanges(t, got, w.want)
	if n := len(got.snapshot()); n != len(w.want) {
		t.Errorf("%d deliveries for %d changes: both outboxes published", n, len(w.want))
	}
}

// TestStopsWhenFencedOut deletes the leader's election key behind its back,
// as another apiserver taking over would: the fenced revision write must fail,
// the outbox must stop and campaign again, and no change may be lost.
func TestStopsWhenFencedOut(t *testing.T) {
	c := etcdtest.Start(t).Client
	b := membus.New(nil)
	got := &collector{}
	consume(t, b, "all", got)
	o := newOutbox(t, c, b)
	run(t, o)
	w := newWriter(t, c)
	w.put(podKey, pod)
	waitChanges(t, got, w.want)

	if _, err := c.Delete(t.Context(), DefaultElectionKey, clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	w.put(podKey, bound)
	testwait.For(t, "a second election after the fenced write failed", func() bool {
		return testutil.ToFloat64(o.metrics.elected) >= 2
	})
	w.del(podKey)
	waitChanges(t, got, w.want)
}
