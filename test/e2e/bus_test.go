package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// busTimeout bounds how long published changes may take to reach the test queue,
// reconnects and restarts included.
const busTimeout = 90 * time.Second

// TestBusMatchesEtcd checks that the outbox publishes every change exactly as etcd recorded
// it, in order per object, through a broker connection loss and an apiserver restart.
func TestBusMatchesEtcd(t *testing.T) {
	requireIntegration(t)
	srv := startServer(t)
	ns := fmt.Sprintf("e2e-bus-%08x", rand.Uint32())
	ours := func(resource, namespace, name string) bool {
		return namespace == ns || (resource == "namespaces" && name == ns)
	}
	rec := startRecorder(t, srv.amqpURL, func(h map[string]string) bool {
		return ours(h[bus.HeaderResource], h[bus.HeaderNamespace], h[bus.HeaderName])
	})
	from := etcdRevision(t, srv) + 1
	c := newWriter(t, srv, ns)

	c.createNamespace()
	c.churn("a", 6)
	c.pod("p1", "node-1.example")
	checkBus(t, srv, rec, from, ours)
	// The real apiserver's status write changes nothing but status, so the outbox routes the
	// Running report as status-only, which the scheduler's queue is not bound to; finishing
	// frees the pod's resources, so Succeeded is a full modification.
	wantKeys := []string{"pods.node.node-1_example.added", "pods.node.node-1_example.modified",
		"pods.node.node-1_example." + bus.StatusWord, "pods.node.node-1_example.modified"}
	if got := podKeys(rec, ns, "p1"); !slices.Equal(got, wantKeys) {
		t.Errorf("routing keys of pod p1: %v, want %v", got, wantKeys)
	}

	// A lost broker connection: the outbox must reconnect and publish what it had not had
	// confirmed, and everything after.
	closed := closeBrokerConnections(t, srv.pid())
	c.churn("b", 6)
	c.pod("p2", "")
	checkBus(t, srv, rec, from, ours)
	ports, err := brokerPorts(srv.pid())
	if err != nil {
		t.Fatal(err)
	}
	for p := range ports {
		if closed[p] {
			t.Errorf("the apiserver still uses broker connection port %d, which the test closed", p)
		}
	}

	// A restart right after a burst: whatever was not yet published must be after it.
	c.churn("c", 10)
	if err := srv.stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.start(t.Context()); err != nil {
		t.Fatal(err)
	}
	c = newWriter(t, srv, ns)
	c.churn("d", 4)
	checkBus(t, srv, rec, from, ours)

	// Data survives: objects written before the restart read back unchanged.
	for _, name := range []string{"a-0", "b-2", "c-8"} {
		cm, err := c.cms.Get(t.Context(), ns, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("configmap %s written before the restart: %v", name, err)
			continue
		}
		if got := cm.Data["step"]; got != "updated" {
			t.Errorf("configmap %s: data.step = %q after the restart, want updated", name, got)
		}
	}
	if _, err := c.pods.Get(t.Context(), ns, "p1", metav1.GetOptions{}); err != nil {
		t.Errorf("pod p1 written before the restart: %v", err)
	}
}

// writer makes API changes in one namespace with the shared client.
type writer struct {
	t    *testing.T
	ns   string
	cl   *client.Client
	cms  *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList]
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
}

func newWriter(t *testing.T, srv *apiserver, ns string) *writer {
	t.Helper()
	cfg, err := client.FromKubeconfig(srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &writer{t: t, ns: ns, cl: cl,
		cms:  client.For[*corev1.ConfigMap, *corev1.ConfigMapList](cl, lookup(t, "configmaps")),
		pods: client.For[*corev1.Pod, *corev1.PodList](cl, lookup(t, "pods")),
	}
}

func lookup(t *testing.T, resource string) *scheme.Resource {
	t.Helper()
	r, err := scheme.Lookup(resource)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *writer) createNamespace() {
	w.t.Helper()
	// client.For, not MustFor: MustFor panics on every type (reported).
	nsc := client.For[*corev1.Namespace, *corev1.NamespaceList](w.cl, lookup(w.t, "namespaces"))
	if _, err := nsc.Create(w.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create namespace: %v", err)
	}
}

// churn creates n configmaps named prefix-i, updates each, labels each with a patch and
// deletes the odd ones: adds, modifies and deletes, several per object.
func (w *writer) churn(prefix string, n int) {
	w.t.Helper()
	ctx := w.t.Context()
	for i := range n {
		name := prefix + "-" + strconv.Itoa(i)
		cm, err := w.cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
			Data:       map[string]string{"step": "created"},
		}, metav1.CreateOptions{})
		if err != nil {
			w.t.Fatalf("create configmap %s: %v", name, err)
		}
		cm.Data["step"] = "updated"
		if _, err := w.cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			w.t.Fatalf("update configmap %s: %v", name, err)
		}
		patch := []byte(`{"metadata":{"labels":{"round":"` + prefix + `"}}}`)
		if _, err := w.cms.Patch(ctx, w.ns, name, types.MergePatchType, patch); err != nil {
			w.t.Fatalf("patch configmap %s: %v", name, err)
		}
		if i%2 == 1 {
			if err := w.cms.Delete(ctx, w.ns, name, metav1.DeleteOptions{}); err != nil {
				w.t.Fatalf("delete configmap %s: %v", name, err)
			}
		}
	}
}

// pod creates a pod, bound to node when it is set (so its routing key names the node),
// patches its labels, and then its status twice, as a kubelet does: Running, then Succeeded.
func (w *writer) pod(name, node string) {
	w.t.Helper()
	ctx := w.t.Context()
	_, err := w.pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("create pod %s: %v", name, err)
	}
	if _, err := w.pods.Patch(ctx, w.ns, name, types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`)); err != nil {
		w.t.Fatalf("patch pod %s: %v", name, err)
	}
	for _, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded} {
		patch := []byte(`{"status":{"phase":"` + phase + `"}}`)
		if _, err := w.pods.Patch(ctx, w.ns, name, types.MergePatchType, patch, "status"); err != nil {
			w.t.Fatalf("patch pod %s status to %s: %v", name, phase, err)
		}
	}
}

// podKeys are the routing keys of a pod's messages in revision order, repeats dropped.
func podKeys(rec *recorder, ns, name string) []string {
	msgs, _ := rec.snapshot()
	seen := map[string]bool{}
	type keyAt struct {
		rev int
		key string
	}
	var got []keyAt
	for _, m := range msgs {
		if m.headers[bus.HeaderResource] != "pods" || m.headers[bus.HeaderNamespace] != ns || m.headers[bus.HeaderName] != name || seen[m.id] {
			continue
		}
		seen[m.id] = true
		rev, _ := strconv.Atoi(m.headers[bus.HeaderResourceVersion])
		got = append(got, keyAt{rev, m.routingKey})
	}
	slices.SortFunc(got, func(a, b keyAt) int { return a.rev - b.rev })
	keys := make([]string, len(got))
	for i, k := range got {
		keys[i] = k.key
	}
	return keys
}

// checkBus waits until the queue has a message for every change etcd recorded since from
// (for the test's objects), then checks each message against its change, the order per
// object, and that repeats are exact.
func checkBus(t *testing.T, srv *apiserver, rec *recorder, from int64, keep func(resource, namespace, name string) bool) {
	t.Helper()
	changes := etcdChanges(t, srv, from, keep)
	if len(changes) == 0 {
		t.Fatal("etcd recorded no changes for the test's objects")
	}
	want := map[string]change{}
	for _, c := range changes {
		want[c.id] = c
	}
	missing := func() []string {
		msgs, _ := rec.snapshot()
		got := map[string]bool{}
		for _, m := range msgs {
			got[m.id] = true
		}
		var out []string
		for _, c := range changes {
			if !got[c.id] {
				out = append(out, c.id)
			}
		}
		return out
	}
	deadline := time.Now().Add(busTimeout)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		t.Fatalf("%d of %d changes never reached the queue within %s, e.g. %v\napiserver log:\n%s",
			len(m), len(changes), busTimeout, m[:min(len(m), 5)], srv.logTail(20))
	}

	msgs, errs := rec.snapshot()
	for _, err := range errs {
		t.Error(err)
	}
	first := map[string]received{}
	lastRev := map[string]int64{}
	dups := 0
	for _, m := range msgs {
		if prev, ok := first[m.id]; ok {
			dups++
			if prev.routingKey != m.routingKey || !bytes.Equal(prev.body, m.body) || !maps.Equal(prev.headers, m.headers) {
				t.Errorf("message %s repeated with different content:\nfirst:  %s %v %s\nrepeat: %s %v %s",
					m.id, prev.routingKey, prev.headers, prev.body, m.routingKey, m.headers, m.body)
			}
			continue
		}
		first[m.id] = m
		c, ok := want[m.id]
		if !ok {
			t.Errorf("message %s (%s) matches no change etcd recorded since revision %d", m.id, m.routingKey, from)
			continue
		}
		if c.rev <= lastRev[c.key] {
			t.Errorf("message %s arrived after revision %d of the same object", m.id, lastRev[c.key])
		}
		lastRev[c.key] = c.rev
		if d := cmp.Diff(expectedMessage(t, c), gotMessage(t, m)); d != "" {
			t.Errorf("message %s differs from etcd's record (-etcd +bus):\n%s", m.id, d)
		}
	}
	t.Logf("bus carried %d changes since revision %d (%d exact repeats)", len(changes), from, dups)
}

// busMessage is a message reduced to what can be compared.
type busMessage struct {
	RoutingKey string
	Headers    map[string]string
	Type       string
	Object     map[string]any
}

func expectedMessage(t *testing.T, c change) busMessage {
	t.Helper()
	return busMessage{
		RoutingKey: bus.RoutingKey(c.resource, c.namespace, c.name, c.stored, c.prev, c.typ),
		Headers: map[string]string{
			bus.HeaderResource:        c.resource,
			bus.HeaderNamespace:       c.namespace,
			bus.HeaderName:            c.name,
			bus.HeaderResourceVersion: strconv.FormatInt(c.rev, 10),
		},
		Type:   c.typ,
		Object: c.object,
	}
}

func gotMessage(t *testing.T, m received) busMessage {
	t.Helper()
	ev, err := bus.DecodeEvent(m.body)
	if err != nil {
		t.Errorf("message %s: %v", m.id, err)
		return busMessage{}
	}
	var obj map[string]any
	if err := json.Unmarshal(ev.Object, &obj); err != nil {
		t.Errorf("message %s: object: %v", m.id, err)
	}
	return busMessage{RoutingKey: m.routingKey, Headers: m.headers, Type: ev.Type, Object: obj}
}
