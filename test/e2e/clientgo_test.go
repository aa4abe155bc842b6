package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// The child process of TestClientGoInformersListWatch runs the scenario with the watch-list
// client feature off, which client-go reads from its environment once per process.
const clientGoChildEnv = "MINIK8S_E2E_CLIENTGO_CHILD_KUBECONFIG"

// TestClientGoInformersWatchList runs a shared informer on the newest client-go in the module
// graph with its defaults: it starts with a streaming list (watch-list) and must not fall back.
func TestClientGoInformersWatchList(t *testing.T) {
	srv := sharedServer(t)
	if !clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Fatal("this client-go does not stream lists by default; the test would not exercise watch-list")
	}
	rec := clientGoScenario(t, srv.kubeconfig(), "clientgo-watchlist")
	if rec.count(func(u string) bool { return strings.Contains(u, "sendInitialEvents=true") }) == 0 {
		t.Errorf("the informers never asked for a streaming list; requests:\n%s", rec)
	}
	if n := rec.count(func(u string) bool { return isPlainList(u) }); n != 0 {
		t.Errorf("%d plain lists: the informers fell back from watch-list; requests:\n%s", n, rec)
	}
}

// TestClientGoInformersListWatch is the same with KUBE_FEATURE_WatchListClient=false: the
// classic list, then watch.
func TestClientGoInformersListWatch(t *testing.T) {
	srv := sharedServer(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestClientGoChild$", "-test.v")
	cmd.Env = append(os.Environ(), clientGoChildEnv+"="+srv.kubeconfig(), "KUBE_FEATURE_WatchListClient=false")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestClientGoChild") {
		t.Fatalf("child with KUBE_FEATURE_WatchListClient=false: %v\n%s", err, out)
	}
}

// TestClientGoChild is TestClientGoInformersListWatch's child process; alone it skips.
func TestClientGoChild(t *testing.T) {
	kubeconfig := os.Getenv(clientGoChildEnv)
	if kubeconfig == "" {
		t.Skip("runs as the child of TestClientGoInformersListWatch")
	}
	if clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient) {
		t.Fatal("KUBE_FEATURE_WatchListClient=false did not turn watch-list off")
	}
	rec := clientGoScenario(t, kubeconfig, "clientgo-listwatch")
	if rec.count(isPlainList) == 0 {
		t.Errorf("no plain list with watch-list off; requests:\n%s", rec)
	}
	if n := rec.count(func(u string) bool { return strings.Contains(u, "sendInitialEvents") }); n != 0 {
		t.Errorf("%d streaming lists with watch-list off; requests:\n%s", n, rec)
	}
}

func isPlainList(u string) bool {
	return strings.Contains(u, "/configmaps?") && !strings.Contains(u, "watch=true") ||
		strings.Contains(u, "/pods?") && !strings.Contains(u, "watch=true")
}

// requests records the URLs a client sent and the media types it sent and accepted.
type requests struct {
	mu   sync.Mutex
	urls []string
}

func (r *requests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		r.mu.Lock()
		r.urls = append(r.urls, req.Method+" "+req.URL.RequestURI()+" ["+req.Header.Get("Content-Type")+"]")
		r.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (r *requests) count(match func(string) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, u := range r.urls {
		if match(u) {
			n++
		}
	}
	return n
}

func (r *requests) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.urls, "\n")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// klogCapture collects what client-go logs at warning level or above, and watch-list notes.
type klogCapture struct {
	mu    sync.Mutex
	lines []string
}

func (k *klogCapture) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		k.mu.Lock()
		k.lines = append(k.lines, prefix+" "+args)
		k.mu.Unlock()
	}, funcr.Options{Verbosity: 4})
}

func (k *klogCapture) matching(words ...string) []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, l := range k.lines {
		for _, w := range words {
			if strings.Contains(strings.ToLower(l), strings.ToLower(w)) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

var (
	klogOnce  sync.Once
	klogFlags = flag.NewFlagSet("klog", flag.ContinueOnError)
)

// clientGoScenario syncs informers over pods and configmaps in a fresh namespace, then sees a
// typed client's creates, updates and deletes arrive, and returns the requests it sent.
func clientGoScenario(t *testing.T, kubeconfig, ns string) *requests {
	t.Helper()
	logs := &klogCapture{}
	klogOnce.Do(func() { klog.InitFlags(klogFlags) })
	// Verbose enough to hear client-go's watch-list notes, for this scenario only.
	_ = klogFlags.Set("v", "4")
	klog.SetLogger(logs.logger())
	defer func() {
		klog.ClearLogger()
		_ = klogFlags.Set("v", "0")
	}()

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rec := &requests{}
	cfg.Wrap(rec.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	cms, pods := cs.CoreV1().ConfigMaps(ns), cs.CoreV1().Pods(ns)
	for i := range 3 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("before-", i)}, Data: map[string]string{"n": fmt.Sprint(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap (typed client, protobuf): %v", err)
		}
	}
	if _, err := pods.Create(ctx, testPod("before"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	cmEvents, podEvents := &eventLog{}, &eventLog{}
	cmInformer := factory.Core().V1().ConfigMaps().Informer()
	podInformer := factory.Core().V1().Pods().Informer()
	if _, err := cmInformer.AddEventHandler(cmEvents.handler()); err != nil {
		t.Fatal(err)
	}
	if _, err := podInformer.AddEventHandler(podEvents.handler()); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	defer func() {
		// The informers stop once ctx ends; Shutdown waits for them.
		cancel()
		factory.Shutdown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), cmInformer.HasSynced, podInformer.HasSynced) {
		t.Fatalf("informers did not sync; client-go said:\n%s", strings.Join(logs.matching("bookmark", "watch", "fail", "error"), "\n"))
	}
	if n := len(cmInformer.GetStore().List()); n != 3 {
		t.Fatalf("configmap cache holds %d objects after sync, want 3", n)
	}
	if n := len(podInformer.GetStore().List()); n != 1 {
		t.Fatalf("pod cache holds %d objects after sync, want 1", n)
	}

	// Typed writes: create, update, delete (its DeleteOptions in protobuf).
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := cms.Get(ctx, "before-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["n"] = "updated"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if err := cms.Delete(ctx, "before-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete (DeleteOptions in protobuf): %v", err)
	}
	if _, err := pods.Create(ctx, testPod("after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grace := int64(0)
	if err := pods.Delete(ctx, "before", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}

	eventually(t, time.Minute, "the informers to see every change", func() bool {
		return cmEvents.has("add after") && cmEvents.has("update before-0") && cmEvents.has("delete before-1") &&
			podEvents.has("add after") && podEvents.has("delete before")
	})
	if got := cmInformer.GetStore().List(); len(got) != 3 {
		t.Errorf("configmap cache holds %d objects, want 3", len(got))
	}
	if obj, ok, _ := cmInformer.GetStore().GetByKey(ns + "/before-0"); !ok || obj.(*corev1.ConfigMap).Data["n"] != "updated" {
		t.Errorf("cache did not take the update: %v", obj)
	}
	// A typed list: with watch-list on, client-go streams it too.
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 3 || list.ResourceVersion == "" {
		t.Errorf("typed list: %v, %d items, resourceVersion %q", err, len(list.Items), list.ResourceVersion)
	}
	if warned := logs.matching("awaiting required bookmark", "falling back", "couldn't be fetched in watchlist mode"); len(warned) > 0 {
		t.Errorf("client-go warned:\n%s", strings.Join(warned, "\n"))
	}
	if rec.count(func(u string) bool { return strings.Contains(u, "[application/vnd.kubernetes.protobuf]") }) == 0 {
		t.Errorf("the typed client sent no protobuf body; requests:\n%s", rec)
	}
	return rec
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}}}
}

// eventLog records informer notifications as "add name", "update name", "delete name".
type eventLog struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (e *eventLog) record(what string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	e.seen[what+" "+m.GetName()] = true
}

func (e *eventLog) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[s]
}

func (e *eventLog) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.record("add", obj) },
		UpdateFunc: func(_, obj any) { e.record("update", obj) },
		DeleteFunc: func(obj any) { e.record("delete", obj) },
	}
}
