package function

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/record"
)

// fakeBuilder fails the builds whose requirements mention "bad".
type fakeBuilder struct {
	mu   sync.Mutex
	reqs []BuildRequest
}

func (b *fakeBuilder) Build(_ context.Context, req BuildRequest, progress func(string)) (string, error) {
	b.mu.Lock()
	b.reqs = append(b.reqs, req)
	b.mu.Unlock()
	progress("Step 1/2 : FROM minik8s/python-runtime")
	progress(" ---> 1234")
	if strings.Contains(req.Requirements, "bad") {
		return "ERROR: no matching distribution", errors.New("pip could not install bad")
	}
	return "Successfully tagged " + req.Image, nil
}

type fakeImages struct {
	mu          sync.Mutex
	distributed []string
	removed     []string // "ns/name keep"
	inUse       []string
}

func (i *fakeImages) Distribute(_ context.Context, image string, _ []*corev1.Node) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.distributed = append(i.distributed, image)
	return nil
}

func (i *fakeImages) Remove(_ context.Context, ns, name string, keep int64) ([]string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.removed = append(i.removed, ns+"/"+name+" "+strconv.FormatInt(keep, 10))
	return i.inUse, nil
}

func (i *fakeImages) Functions(context.Context) ([]string, error) { return nil, nil }

type env struct {
	t           *testing.T
	c           *Controller
	fns         *informer.Informer
	deps        *informer.Informer
	functions   *fake.Writer[*serverlessv1.Function]
	deployments *fake.Writer[*appsv1.Deployment]
	build       *fakeBuilder
	images      *fakeImages
	events      *record.Fake
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, build: &fakeBuilder{}, images: &fakeImages{}, events: record.NewFake(100),
		functions:   fake.New(func() *serverlessv1.Function { return &serverlessv1.Function{} }),
		deployments: fake.New(func() *appsv1.Deployment { return &appsv1.Deployment{} }),
	}
	e.fns = informer.New(informer.Config{Name: "functions"})
	e.deps = informer.New(informer.Config{Name: "deployments"})
	nodes := informer.New(informer.Config{Name: "nodes"})
	e.c = New(Config{FunctionInformer: e.fns, DeploymentInformer: e.deps, NodeInformer: nodes,
		Deployments: e.deployments, Functions: e.functions,
		Builder: e.build, Images: e.images, Recorder: e.events})
	return e
}

// cache puts obj in inf as the bus would bring it.
func (e *env) cache(inf *informer.Informer, obj runtime.Object) {
	e.t.Helper()
	if _, err := inf.Apply(watch.Modified, obj.DeepCopyObject()); err != nil {
		e.t.Fatal(err)
	}
}

// put stores fn in the apiserver and the cache, as after a user's write; fn gets the stored
// resourceVersion.
func (e *env) put(fn *serverlessv1.Function) {
	e.t.Helper()
	stored := e.functions.Put(fn)
	fn.ResourceVersion = stored.ResourceVersion
	e.cache(e.fns, stored)
}

func (e *env) putDeployment(d *appsv1.Deployment) {
	e.t.Helper()
	stored := e.deployments.Put(d)
	d.ResourceVersion = stored.ResourceVersion
	e.cache(e.deps, stored)
}

// sent are the objects the controller sent with verb through w.
func sent[T runtime.Object](w *fake.Writer[T], verb string) []T {
	var out []T
	for _, c := range w.CallsOf(verb) {
		out = append(out, c.Object.(T))
	}
	return out
}

func (e *env) created() []*appsv1.Deployment { return sent(e.deployments, fake.VerbCreate) }
func (e *env) updated() []*appsv1.Deployment { return sent(e.deployments, fake.VerbUpdate) }
func (e *env) patches() []fake.Call          { return e.functions.CallsOf(fake.VerbPatch) }

// sync reconciles the function and, when the controller patched its status, brings the
// patched function to the cache.
func (e *env) sync(fn *serverlessv1.Function) *serverlessv1.Function {
	e.t.Helper()
	n := len(e.patches())
	if res, err := e.c.Reconcile(e.t.Context(), fn.Namespace+"/"+fn.Name); err != nil || res.RequeueAfter > 0 {
		e.t.Fatalf("reconcile: %v, requeue after %v", err, res.RequeueAfter)
	}
	patches := e.patches()
	if len(patches) == n {
		return fn
	}
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patches[len(patches)-1].Patch, &p); err != nil {
		e.t.Fatal(err)
	}
	if p.Metadata.ResourceVersion != fn.ResourceVersion {
		e.t.Errorf("patch precondition resourceVersion %q, want the one read, %q", p.Metadata.ResourceVersion, fn.ResourceVersion)
	}
	out, _ := e.functions.Object(fn.Namespace, fn.Name)
	e.cache(e.fns, out)
	return out
}

// waitBuild waits for the background build of fn to report its outcome.
func (e *env) waitBuild(fn *serverlessv1.Function) {
	e.t.Helper()
	key := fn.Namespace + "/" + fn.Name
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.c.mu.Lock()
		_, done := e.c.outcomes[key]
		e.c.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("the build reported no outcome")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) drainEvents() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestReconcileBuildDeployFailDelete(t *testing.T) {
	e := newEnv(t)
	f := fn()
	e.put(f)

	// A new function: version 1 is built in the background.
	f = e.sync(f)
	if f.Status.Phase != PhaseBuilding || f.Status.Version != 1 || f.Status.Build == nil || f.Status.Build.Phase != BuildRunning {
		t.Fatalf("after the first sync: %+v", f.Status)
	}
	e.waitBuild(f)
	if len(e.build.reqs) != 1 || e.build.reqs[0].Image != "minik8s-fn/default.add:v1" || e.build.reqs[0].Runtime != "python3" {
		t.Fatalf("build requests %+v", e.build.reqs)
	}
	if len(e.images.distributed) != 1 || e.images.distributed[0] != "minik8s-fn/default.add:v1" {
		t.Errorf("distributed %v", e.images.distributed)
	}

	// The outcome: the status says so and the Deployment is created.
	f = e.sync(f)
	if f.Status.Phase != PhaseReady || f.Status.Image != "minik8s-fn/default.add:v1" || f.Status.Build.Phase != BuildSucceeded {
		t.Fatalf("after the build: %+v", f.Status)
	}
	if len(e.created()) != 1 || e.created()[0].Spec.Template.Spec.Containers[0].Image != "minik8s-fn/default.add:v1" || *e.created()[0].Spec.Replicas != 0 {
		t.Fatalf("created %+v", e.created())
	}
	events := strings.Join(e.drainEvents(), "\n")
	for _, want := range []string{"BuildStarted building version 1", "Building version 1: Step 1/2", "BuildSucceeded version 1", "Deployed created deployment add"} {
		if !strings.Contains(events, want) {
			t.Errorf("events lack %q:\n%s", want, events)
		}
	}
	if strings.Contains(events, "---> 1234") {
		t.Errorf("a layer id became an event:\n%s", events)
	}

	// The Deployment in the cache with two ready pods: the counts reach the status, and a
	// second look changes nothing.
	d := e.created()[0].DeepCopy()
	d.Generation = 1
	d.Spec.Replicas = ptr(int32(2))
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2}
	e.putDeployment(d)
	f = e.sync(f)
	if f.Status.ReadyReplicas != 2 || f.Status.Replicas != 2 {
		t.Errorf("replicas %d ready %d, want 2 and 2", f.Status.Replicas, f.Status.ReadyReplicas)
	}
	patches := len(e.patches())
	f = e.sync(f)
	if len(e.patches()) != patches || len(e.updated()) != 0 || len(e.build.reqs) != 1 {
		t.Errorf("a sync with nothing new wrote: %d patches, %d updates, %d builds", len(e.patches())-patches, len(e.updated()), len(e.build.reqs))
	}
	// Rolled out with no build running: images of other versions go.
	if len(e.images.removed) != 1 || e.images.removed[0] != "default/add 1" {
		t.Errorf("removed %v, want the images of add but version 1", e.images.removed)
	}

	// Env changes the Deployment, not the image.
	f = f.DeepCopy()
	f.Generation++
	f.Spec.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	e.put(f)
	f = e.sync(f)
	if len(e.build.reqs) != 1 || len(e.updated()) != 1 || *e.updated()[0].Spec.Replicas != 2 {
		t.Fatalf("env change: %d builds, updates %v", len(e.build.reqs), e.updated())
	}
	e.putDeployment(e.updated()[0])

	// A requirement that cannot be installed: version 2 fails, version 1 keeps serving.
	f = f.DeepCopy()
	f.Generation++
	f.Spec.Requirements = "bad==1\n"
	e.put(f)
	f = e.sync(f)
	if f.Status.Version != 2 || f.Status.Phase != PhaseBuilding {
		t.Fatalf("second source: %+v", f.Status)
	}
	e.waitBuild(f)
	f = e.sync(f)
	if f.Status.Phase != PhaseFailed || f.Status.Image != "minik8s-fn/default.add:v1" || !strings.Contains(f.Status.Build.Message, "pip could not install bad") {
		t.Fatalf("failed build: %+v", f.Status)
	}
	if len(e.updated()) != 1 {
		t.Errorf("a failed build touched the Deployment: %d updates", len(e.updated()))
	}
	if events := strings.Join(e.drainEvents(), "\n"); !strings.Contains(events, "Warning BuildFailed version 2") {
		t.Errorf("no BuildFailed event:\n%s", events)
	}
	// The failed source is not built again on every sync.
	e.sync(f)
	if len(e.build.reqs) != 2 {
		t.Errorf("%d builds, want 2", len(e.build.reqs))
	}

	// Deleted: its images go; one still in use is tried again later.
	e.images.inUse = []string{"minik8s-fn/default.add:v1"}
	if _, err := e.fns.Apply(watch.Deleted, f); err != nil {
		t.Fatal(err)
	}
	if res, err := e.c.Reconcile(t.Context(), "default/add"); err != nil || res.RequeueAfter == 0 {
		t.Errorf("deleted with an image in use: %v, %+v, want a requeue", err, res)
	}
	e.images.inUse = nil
	if _, err := e.c.Reconcile(t.Context(), "default/add"); err != nil {
		t.Errorf("deleted: %v", err)
	}
	if last := e.images.removed[len(e.images.removed)-1]; last != "default/add 0" {
		t.Errorf("removed %v, want every image of add", e.images.removed)
	}
}

func TestReconcileWaitsForItsOwnStatus(t *testing.T) {
	e := newEnv(t)
	f := fn()
	e.put(f)
	if _, err := e.c.Reconcile(t.Context(), "default/add"); err != nil {
		t.Fatal(err)
	}
	e.waitBuild(f)
	// The cache still shows the function before the status that started the build: the
	// outcome waits, and the same version is not built twice.
	if res, err := e.c.Reconcile(t.Context(), "default/add"); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("outcome before the cache saw the build: %v, %+v, want a requeue", err, res)
	}
	if len(e.build.reqs) != 1 || len(e.created()) != 0 {
		t.Errorf("%d builds, %d deployments created", len(e.build.reqs), len(e.created()))
	}
}
