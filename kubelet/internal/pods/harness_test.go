package pods

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	netfake "minik8s.io/kubelet/internal/network/fake"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	rtfake "minik8s.io/kubelet/internal/runtime/fake"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// statusLog is a StatusWriter that keeps every write.
type statusLog struct {
	mu     sync.Mutex
	writes map[types.UID][]corev1.PodStatus
}

func (s *statusLog) UpdateStatus(_ context.Context, pod *corev1.Pod) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes[pod.UID] = append(s.writes[pod.UID], *pod.Status.DeepCopy())
	return pod.ResourceVersion, nil
}

func (s *statusLog) latest(uid types.UID) (corev1.PodStatus, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writes[uid]
	if len(w) == 0 {
		return corev1.PodStatus{}, 0
	}
	return *w[len(w)-1].DeepCopy(), len(w)
}

// any reports whether some status written for the pod satisfies pred.
func (s *statusLog) any(uid types.UID, pred func(corev1.PodStatus) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.writes[uid], pred)
}

// finalizer counts Finalize calls.
type finalizer struct {
	mu    sync.Mutex
	calls []types.UID
	// atFinalize is what the runtime and network held when Finalize was called.
	containersLeft int
	attachedLeft   int
	h              *harness
}

func (f *finalizer) Finalize(ctx context.Context, pod *corev1.Pod) error {
	cs, _ := f.h.rt.List(ctx, map[string]string{spec.LabelPodUID: string(pod.UID)})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, pod.UID)
	f.containersLeft = len(cs)
	f.attachedLeft = len(f.h.net.Attached())
	return nil
}

func (f *finalizer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

type harness struct {
	t      *testing.T
	clk    *clock.Fake
	rt     *rtfake.Runtime
	net    *netfake.Network
	status *statusLog
	fin    *finalizer
	events *record.Fake
	// podLists counts the Manager's lists of single pods' containers.
	podLists *listCounter
	root     string
	m        *Manager
	stop     func()
	// configure, when set, adjusts the Manager's Config before each start.
	configure func(*Config)
	creates   *createLog
}

// createLog keeps the configuration of every container created, and can fail creates.
type createLog struct {
	mu      sync.Mutex
	configs []runtime.ContainerConfig
	// fail, when set, is the error of creating cfg (nil lets it through).
	fail func(cfg runtime.ContainerConfig) error
}

func (c *createLog) add(cfg runtime.ContainerConfig) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.configs = append(c.configs, cfg)
	if c.fail != nil {
		return c.fail(cfg)
	}
	return nil
}

// setFail makes creates fail with what fail returns.
func (c *createLog) setFail(fail func(cfg runtime.ContainerConfig) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = fail
}

// count is how many creates were asked for containers whose name starts with prefix.
func (c *createLog) count(prefix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cfg := range c.configs {
		if strings.HasPrefix(cfg.Name, prefix) {
			n++
		}
	}
	return n
}

// last is the configuration of the last container created whose name starts with prefix.
func (c *createLog) last(prefix string) (runtime.ContainerConfig, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.configs) - 1; i >= 0; i-- {
		if strings.HasPrefix(c.configs[i].Name, prefix) {
			return c.configs[i], true
		}
	}
	return runtime.ContainerConfig{}, false
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, nil)
}

// newHarnessWith is newHarness with configure applied to the Manager's Config.
func newHarnessWith(t *testing.T, configure func(*Config)) *harness {
	t.Helper()
	clk := clock.NewFake(t0)
	h := &harness{
		t: t, clk: clk, rt: rtfake.New(clk), net: netfake.New("10.244.1.0/24"),
		status: &statusLog{writes: map[types.UID][]corev1.PodStatus{}},
		events: record.NewFake(10000), root: t.TempDir(), podLists: &listCounter{n: map[string]int{}, all: map[string]int{}},
		configure: configure, creates: &createLog{},
	}
	h.fin = &finalizer{h: h}
	for _, img := range []string{spec.DefaultSandboxImage, "echo:1", "echo:2", "busybox:1"} {
		h.rt.AddImage(img)
	}
	h.start()
	return h
}

// start runs a new Manager (a kubelet process) on the harness's runtime and network.
func (h *harness) start() {
	cfg := Config{
		NodeName: "n1", HostIP: "192.168.1.2", RootDir: h.root,
		Runtime: thinList{h.rt, h.podLists, h.creates}, Network: h.net, Status: h.status, Finalizer: h.fin, Recorder: h.events, Clock: h.clk,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		RelistPeriod: time.Second, ResyncPeriod: 10 * time.Second,
	}
	if h.configure != nil {
		h.configure(&cfg)
	}
	h.m = New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.m.Start(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("Start returned %v", err)
			}
		})
	}
	h.t.Cleanup(h.stop)
}

// restart stops the Manager and starts a fresh one, as a kubelet restart does.
func (h *harness) restart() {
	h.stop()
	h.start()
}

// eventually steps the fake clock a second at a time until cond holds; the steps let the
// PLEG, resyncs, back-offs and probes make progress. It fails after many steps or 20 s of
// real time.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		// Let the goroutines react to the previous step before judging.
		for j := 0; j < 20; j++ {
			if cond() {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		if i > 600 || time.Now().After(deadline) {
			h.t.Fatalf("%s: not reached after %d clock steps", what, i)
		}
		h.clk.Step(time.Second)
	}
}

// settle waits, without moving the clock, until cond holds.
func (h *harness) settle(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not reached within 20s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *harness) containers(uid types.UID) []runtime.Container {
	cs, err := h.rt.List(context.Background(), map[string]string{spec.LabelPodUID: string(uid)})
	if err != nil {
		h.t.Fatalf("List: %v", err)
	}
	return cs
}

// running returns the running container of the pod named name, if one.
func (h *harness) running(uid types.UID, name string) (runtime.Container, bool) {
	for _, c := range h.containers(uid) {
		if c.Labels[spec.LabelContainerName] == name && c.State == runtime.StateRunning {
			return c, true
		}
	}
	return runtime.Container{}, false
}

func (h *harness) latest(uid types.UID) corev1.PodStatus {
	st, _ := h.status.latest(uid)
	return st
}

// eventLog drains the recorder into a growing list.
func (h *harness) eventLog() func() []string {
	var got []string
	return func() []string {
		for {
			select {
			case e := <-h.events.Events:
				got = append(got, e)
			default:
				return slices.Clone(got)
			}
		}
	}
}

func containerStatus(st corev1.PodStatus, name string) corev1.ContainerStatus {
	for _, cs := range append(slices.Clone(st.InitContainerStatuses), st.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return corev1.ContainerStatus{}
}

func condition(st corev1.PodStatus, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func newPod(uid string, policy corev1.RestartPolicy, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + uid, Namespace: "default", UID: types.UID(uid), ResourceVersion: "1"},
		Spec:       corev1.PodSpec{NodeName: "n1", RestartPolicy: policy},
	}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: c, Image: "echo:1", ImagePullPolicy: corev1.PullIfNotPresent,
			Env: []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
		})
	}
	return p
}

func describe(cs []runtime.Container) string {
	s := ""
	for _, c := range cs {
		s += fmt.Sprintf("%s(%s) ", c.Name, c.State)
	}
	return s
}

type rtCall = rtfake.Call

// thinList lists like Docker: ids, labels and states only, no exit codes or times, so the
// tests prove the manager inspects what it needs.
type thinList struct {
	*rtfake.Runtime
	podLists *listCounter
	creates  *createLog
}

func (l thinList) Create(ctx context.Context, cfg runtime.ContainerConfig) (string, error) {
	if err := l.creates.add(cfg); err != nil {
		return "", err
	}
	return l.Runtime.Create(ctx, cfg)
}

// listCounter counts, per pod uid, the lists of that pod's containers: those that found
// none, and all of them.
type listCounter struct {
	mu  sync.Mutex
	n   map[string]int
	all map[string]int
}

func (c *listCounter) count(uid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[uid]
}

func (c *listCounter) countAll(uid string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.all[uid]
}

func (r thinList) List(ctx context.Context, match map[string]string) ([]runtime.Container, error) {
	cs, err := r.Runtime.List(ctx, match)
	if uid, ok := match[spec.LabelPodUID]; ok && r.podLists != nil && err == nil {
		r.podLists.mu.Lock()
		r.podLists.all[uid]++
		if len(cs) == 0 {
			r.podLists.n[uid]++
		}
		r.podLists.mu.Unlock()
	}
	for i := range cs {
		cs[i] = runtime.Container{ID: cs[i].ID, Name: cs[i].Name, Image: cs[i].Image, ImageID: cs[i].ImageID,
			Labels: cs[i].Labels, State: cs[i].State, CreatedAt: cs[i].CreatedAt}
	}
	return cs, err
}
