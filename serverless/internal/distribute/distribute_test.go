package distribute

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/serverless/internal/imagestore"
	"minik8s.io/serverless/internal/imagestore/fake"
)

// labels are a function image's; a node's older image under the same tag has others, so
// another id.
var labels = map[string]string{"serverless.minik8s.io/function": "add"}

// localStore is the local engine holding images, built by the serverless component.
func localStore(images ...string) *fake.Store {
	s := fake.New()
	for _, i := range images {
		s.Add(i, labels)
	}
	return s
}

// gated is a local engine whose saves wait until gate is closed, counted.
type gated struct {
	*fake.Store
	gate  chan struct{}
	saves atomic.Int32
}

func (g *gated) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	g.saves.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Store.Save(ctx, ref)
}

// saves counts the archives the local engine made.
func saves(s *fake.Store) int {
	n := 0
	for _, c := range s.Calls() {
		if strings.HasPrefix(c, "save ") {
			n++
		}
	}
	return n
}

// kubelet is an httptest kubelet over its node's engine (a fake store), checking the token
// as the real one.
type kubelet struct {
	srv    *httptest.Server
	engine *fake.Store
	mu     sync.Mutex
	loads  int
	// forbid answers POST /images 403, as a kubelet does for other identities.
	forbid bool
}

const token = "serverless-token"

// newKubelet is a node whose engine holds images, the same as the local engine's.
func newKubelet(t *testing.T, images ...string) *kubelet {
	k := &kubelet{engine: localStore(images...)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /images/{ref...}", func(w http.ResponseWriter, r *http.Request) {
		ref := r.PathValue("ref")
		img, err := k.engine.Inspect(r.Context(), ref)
		if err != nil {
			w.WriteHeader(http.StatusNotFound)
		}
		fmt.Fprintf(w, `{"image":%q,"present":%v,"id":%q}`, ref, err == nil, img.ID)
	})
	mux.HandleFunc("POST /images", func(w http.ResponseWriter, r *http.Request) {
		if k.forbid {
			http.Error(w, `user "system:serverless" may not load images into node x`, http.StatusForbidden)
			return
		}
		if r.Header.Get("Content-Type") != "application/x-tar" {
			http.Error(w, "want an image archive", http.StatusUnsupportedMediaType)
			return
		}
		loaded, err := k.engine.Load(r.Context(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		k.mu.Lock()
		k.loads++
		k.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string][]string{"loaded": loaded})
	})
	k.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(k.srv.Close)
	return k
}

// has reports whether the node's engine holds the local engine's image.
func (k *kubelet) has(t *testing.T, local *fake.Store, image string) bool {
	t.Helper()
	want, err := local.Inspect(t.Context(), image)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.engine.Inspect(t.Context(), image)
	return err == nil && got.ID == want.ID
}

func (k *kubelet) loaded() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.loads
}

// node is a Node whose kubelet endpoint is k's server.
func (k *kubelet) node(t *testing.T, name string, ready bool) *corev1.Node {
	host, port, err := net.SplitHostPort(strings.TrimPrefix(k.srv.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	return n
}

func newDistributor(e imagestore.Store, tok string) *Distributor {
	return New(Config{Images: e, Token: tok, Timeout: 30 * time.Second})
}

func TestEnsure(t *testing.T) {
	const image = "minik8s-fn/default.add:v2"
	has, lacks1, lacks2, down := newKubelet(t, image), newKubelet(t), newKubelet(t, "other:v1"), newKubelet(t)
	e := localStore(image)
	d := newDistributor(e, token)
	nodes := []*corev1.Node{has.node(t, "has", true), lacks1.node(t, "lacks1", true),
		lacks2.node(t, "lacks2", true), down.node(t, "down", false)}
	res, err := d.Ensure(t.Context(), image, nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := []NodeResult{{Node: "has"}, {Node: "lacks1", Sent: true}, {Node: "lacks2", Sent: true}, {Node: "down", Skipped: true}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, k := range []*kubelet{has, lacks1, lacks2} {
		if !k.has(t, e, image) {
			t.Errorf("a Ready node lacks %s", image)
		}
	}
	if down.has(t, e, image) || down.loaded() != 0 {
		t.Error("a node that is not Ready was sent the image")
	}
	if n := saves(e); n != 2 {
		t.Errorf("%d saves, want one per node that lacked the image (2)", n)
	}
	// Again: every Ready node has it now, nothing is sent (as on make up's shared engine).
	res, err = d.Ensure(t.Context(), image, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Sent {
			t.Errorf("%s was sent the image again", r.Node)
		}
	}
	if n := saves(e); n != 0 || lacks1.loaded() != 1 || lacks2.loaded() != 1 {
		t.Errorf("second Ensure saved or loaded again: %d saves, loads %d %d", n, lacks1.loaded(), lacks2.loaded())
	}
}

func TestEnsureFailures(t *testing.T) {
	const image = "minik8s-fn/default.add:v1"
	ok, forbidding := newKubelet(t), newKubelet(t)
	forbidding.forbid = true
	noAddress := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "noaddr"}}
	noAddress.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	e := localStore(image)
	d := newDistributor(e, token)
	res, err := d.Ensure(t.Context(), image, []*corev1.Node{ok.node(t, "ok", true), forbidding.node(t, "forbidding", true), noAddress})
	if err == nil {
		t.Fatal("Ensure succeeded with a forbidding kubelet")
	}
	if !res[0].Sent || res[0].Err != nil || !ok.has(t, e, image) {
		t.Errorf("the good node: %+v", res[0])
	}
	for i, want := range map[int]string{
		1: `image minik8s-fn/default.add:v1 on node forbidding: load the image: the kubelet forbids it: user "system:serverless" may not load images`,
		2: "image minik8s-fn/default.add:v1 on node noaddr: node noaddr does not report a kubelet address",
	} {
		if res[i].Err == nil || !strings.Contains(res[i].Err.Error(), want) {
			t.Errorf("node %s: %v, want %q", res[i].Node, res[i].Err, want)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the joined error lacks %q: %v", want, err)
		}
	}

	// A token the kubelet refuses, an image the local engine does not have.
	if _, err := newDistributor(e, "wrong").Ensure(t.Context(), image, []*corev1.Node{forbidding.node(t, "n", true)}); err == nil ||
		!strings.Contains(err.Error(), "the kubelet refused the serverless component's token") {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := d.Ensure(t.Context(), "missing:v1", []*corev1.Node{ok.node(t, "ok", true)}); err == nil ||
		!strings.Contains(err.Error(), "inspect the image in the local engine: no such image") {
		t.Errorf("missing image: %v", err)
	}
}

func TestEnsureSharesTransfers(t *testing.T) {
	const image = "minik8s-fn/default.add:v4"
	k := newKubelet(t)
	e := &gated{Store: localStore(image), gate: make(chan struct{})}
	d := newDistributor(e, token)
	n := k.node(t, "n1", true)
	var wg sync.WaitGroup
	results := make([][]NodeResult, 5)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if results[i], err = d.Ensure(t.Context(), image, []*corev1.Node{n}); err != nil {
				t.Error(err)
			}
		}()
	}
	// Let the first call reach the engine, so the others find its transfer under way.
	deadline := time.Now().Add(10 * time.Second)
	for e.saves.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	close(e.gate)
	wg.Wait()
	if s := e.saves.Load(); s != 1 || k.loaded() != 1 {
		t.Errorf("5 concurrent calls made %d saves and %d loads, want 1 and 1", s, k.loaded())
	}
	for _, r := range results {
		if len(r) != 1 || r[0].Err != nil || !r[0].Sent && !k.has(t, e.Store, image) {
			t.Errorf("result %+v", r)
		}
	}
}

func TestImagePath(t *testing.T) {
	for in, want := range map[string]string{
		"minik8s-fn/default.add:v1": "/images/minik8s-fn/default.add:v1",
		"localhost:5000/a/b:c":      "/images/localhost:5000/a/b:c",
		"x y":                       "/images/x%20y",
	} {
		if got := imagePath(in); got != want {
			t.Errorf("imagePath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestEnsureReplacesStaleTag: a node holding another image under the tag (a function deleted
// and made again starts at version 1 again) is sent the local one.
func TestEnsureReplacesStaleTag(t *testing.T) {
	const image = "minik8s-fn/default.add:v1"
	stale, current := newKubelet(t), newKubelet(t, image)
	olderID := stale.engine.Add(image, map[string]string{"serverless.minik8s.io/function": "add", "older": "yes"})
	e := localStore(image)
	if e.Add(image, labels) == olderID {
		t.Fatal("the older image has the local one's id")
	}
	d := newDistributor(e, token)
	res, err := d.Ensure(t.Context(), image, []*corev1.Node{stale.node(t, "stale", true), current.node(t, "current", true)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]NodeResult{{Node: "stale", Sent: true}, {Node: "current"}}, res); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if stale.loaded() != 1 || current.loaded() != 0 || !stale.has(t, e, image) {
		t.Errorf("loads: stale node %d (holds the local image: %v), current node %d; want 1 and 0",
			stale.loaded(), stale.has(t, e, image), current.loaded())
	}
}
