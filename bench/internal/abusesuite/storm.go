package abusesuite

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/procstat"
	"minik8s.io/bench/internal/stats"
	"minik8s.io/shared/abuse"
	mclient "minik8s.io/shared/client"
)

// StormConfig sizes the storm.
type StormConfig struct {
	Kubeconfig string // make up's cluster; default $KUBECONFIG, else $MINIK8S_HOME/kubeconfig
	// Pods of each kind of failure.
	Pods int
	// Window is how long each phase (quiet, storm) is measured.
	Window time.Duration
	// GoodEvery paces the good pods created during each phase.
	GoodEvery time.Duration
	// Burst is how long after the storm's pods are created the good pods' starts count as
	// during its creation burst rather than during the storm.
	Burst time.Duration
}

// StormDefaults are the flags' defaults: 20 pods of each kind, measured for 60 s.
var StormDefaults = StormConfig{Pods: 20, Window: 60 * time.Second, GoodEvery: 5 * time.Second, Burst: 15 * time.Second}

// Phase is what one window measured.
type Phase struct {
	Name string
	// Kubelet, Dockerd and Engine (containerd and the container shims) are CPU over the window.
	Kubelet, Dockerd, Engine time.Duration
	// Machine is the whole machine's busy time over the window.
	Machine time.Duration
	Window  time.Duration
	// Starts are the good pods' create → Running seen by a watch, and BurstStarts those
	// created during the storm's own creation burst.
	Starts, BurstStarts []time.Duration
	// Asked and Failed count the requests to a pod that was running before the window.
	Asked, Failed int64
	// Attempts sums the failing pods' container attempts (restarts + 1); MaxRestarts is the
	// largest restartCount, AllowedRestarts what the back-off allows over the window.
	Attempts, MaxRestarts, AllowedRestarts int
}

// Cores is a CPU time as a share of the window.
func (p Phase) Cores(d time.Duration) float64 { return d.Seconds() / p.Window.Seconds() }

// StormReport is the quiet phase, then the storm.
type StormReport struct {
	Node   string
	Pods   int
	Phases []Phase
}

type storm struct {
	cfg  StormConfig
	log  *slog.Logger
	ns   string
	pods *mclient.Typed[*corev1.Pod, *corev1.PodList]
	// running is when the watch first saw each pod Running.
	mu      sync.Mutex
	running map[string]time.Time
	seen    chan struct{}
	// phases counts the phases measured, to name each one's good pods.
	phases int
}

// RunStorm measures the quiet node for a window, then the storm for another, in a namespace of
// its own that it deletes at the end.
func RunStorm(ctx context.Context, cfg StormConfig, log *slog.Logger) (*StormReport, error) {
	mu, cleanup, err := cluster.ConnectMakeUp(ctx, cfg.Kubeconfig, "storm", "stormbench", log)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	s := &storm{cfg: cfg, log: log, ns: mu.Namespace, pods: mclient.MustFor[*corev1.Pod, *corev1.PodList](mu.API),
		running: map[string]time.Time{}, seen: make(chan struct{}, 1)}
	nodes, err := mclient.MustFor[*corev1.Node, *corev1.NodeList](mu.API).List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("the storm suite measures make up's one node; the cluster has %d", len(nodes.Items))
	}
	rep := &StormReport{Node: nodes.Items[0].Name, Pods: cfg.Pods}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	w, err := s.pods.Watch(wctx, s.ns, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	go s.watch(w)

	if err := s.create(ctx, s.goodPod("neighbour", "minik8s/echo:1.0")); err != nil {
		return nil, err
	}
	if err := s.waitRunning(ctx, "neighbour", 2*time.Minute); err != nil {
		return nil, err
	}
	nb, err := s.pods.Get(ctx, s.ns, "neighbour", metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	url := "http://" + nb.Status.PodIP + ":8080/"

	quiet, err := s.phase(ctx, "quiet node", url, nil)
	if err != nil {
		return rep, err
	}
	rep.Phases = append(rep.Phases, quiet)

	// The same number of pods created at once, healthy: the storm's creation burst without
	// the failures, its baseline.
	var healthy []*corev1.Pod
	for i := range 2 * cfg.Pods {
		p := s.goodPod(fmt.Sprintf("healthy-%d", i), "minik8s/busybox:1.0", "sleep", "3600")
		p.Labels = map[string]string{healthyLabel: "true"}
		healthy = append(healthy, p)
	}
	burst, err := s.phase(ctx, fmt.Sprintf("%d healthy pods created at once", len(healthy)), url, healthy)
	if err != nil {
		return rep, err
	}
	rep.Phases = append(rep.Phases, burst)
	if err := s.removeHealthy(ctx); err != nil {
		return rep, err
	}

	stormPods := abuse.StormPods(s.ns, cfg.Pods)
	busy, err := s.phase(ctx, fmt.Sprintf("storm of %d failing pods", len(stormPods)), url, stormPods)
	if err != nil {
		return rep, err
	}
	rep.Phases = append(rep.Phases, busy)
	return rep, nil
}

const healthyLabel = "minik8s.io/healthy-burst"

// removeHealthy deletes the healthy burst's pods and waits until they are gone, so the storm
// runs on the node as quiet as before.
func (s *storm) removeHealthy(ctx context.Context) error {
	sel := metav1.ListOptions{LabelSelector: healthyLabel}
	if err := s.pods.DeleteCollection(ctx, s.ns, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("delete the healthy pods: %w", err)
	}
	return cluster.Until(ctx, 3*time.Minute, 500*time.Millisecond, "the healthy pods gone", func() (bool, error) {
		list, err := s.pods.List(ctx, s.ns, sel)
		return err == nil && len(list.Items) == 0, err
	})
}

func (s *storm) watch(w watch.Interface) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || p.Status.Phase != corev1.PodRunning {
			continue
		}
		s.mu.Lock()
		if _, ok := s.running[p.Name]; !ok {
			s.running[p.Name] = time.Now()
		}
		s.mu.Unlock()
		select {
		case s.seen <- struct{}{}:
		default:
		}
	}
}

func (s *storm) runningAt(name string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.running[name]
	return at, ok
}

func (s *storm) waitRunning(ctx context.Context, name string, timeout time.Duration) error {
	return cluster.Until(ctx, timeout, 20*time.Millisecond, name+" Running", func() (bool, error) {
		_, ok := s.runningAt(name)
		return ok, nil
	})
}

func (s *storm) goodPod(name, image string, command ...string) *corev1.Pod {
	grace := int64(1)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "c", Image: image, Command: command, ImagePullPolicy: corev1.PullIfNotPresent}}}}
}

func (s *storm) create(ctx context.Context, p *corev1.Pod) error {
	if _, err := s.pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	return nil
}

type cpu struct{ kubelet, dockerd, engine, machine time.Duration }

func sample() cpu {
	var c cpu
	c.kubelet = procstat.Sum(procstat.FindProcesses("kubelet"), true)
	c.dockerd = procstat.Sum(procstat.FindProcesses("dockerd"), false)
	c.engine = procstat.Sum(procstat.FindProcesses("containerd", "containerd-shim"), true)
	c.machine, _ = procstat.MachineBusy()
	return c
}

// phase creates burst (none for the quiet phase) at once, then measures a window from that
// moment: CPU, a good pod every GoodEvery, and the neighbour asked every 200 ms.
func (s *storm) phase(ctx context.Context, name, neighbour string, burst []*corev1.Pod) (Phase, error) {
	ph := Phase{Name: name, Window: s.cfg.Window}
	var asked, failed atomic.Int64
	askCtx, stopAsking := context.WithCancel(ctx)
	var asking sync.WaitGroup
	asking.Add(1)
	go func() {
		defer asking.Done()
		hc := &http.Client{Timeout: 5 * time.Second}
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-askCtx.Done():
				return
			case <-t.C:
			}
			asked.Add(1)
			resp, err := hc.Get(neighbour)
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != http.StatusOK {
				failed.Add(1)
			}
		}
	}()

	start := time.Now()
	from := sample()
	for _, p := range burst {
		if err := s.create(ctx, p); err != nil {
			stopAsking()
			return ph, err
		}
	}
	type good struct {
		name    string
		created time.Time
		burst   bool
	}
	var goods []good
	for i := 0; time.Since(start) < s.cfg.Window; i++ {
		at := start.Add(time.Duration(i) * s.cfg.GoodEvery)
		if at.After(start.Add(s.cfg.Window)) {
			break
		}
		select {
		case <-ctx.Done():
			stopAsking()
			return ph, ctx.Err()
		case <-time.After(time.Until(at)):
		}
		g := good{name: fmt.Sprintf("good-%d-%d", s.phases, i), created: time.Now()}
		g.burst = len(burst) > 0 && g.created.Sub(start) < s.cfg.Burst
		if err := s.create(ctx, s.goodPod(g.name, "minik8s/busybox:1.0", "sleep", "3600")); err != nil {
			stopAsking()
			return ph, err
		}
		goods = append(goods, g)
	}
	time.Sleep(time.Until(start.Add(s.cfg.Window)))
	to := sample()
	stopAsking()
	asking.Wait()
	ph.Kubelet, ph.Dockerd, ph.Engine, ph.Machine = to.kubelet-from.kubelet, to.dockerd-from.dockerd, to.engine-from.engine, to.machine-from.machine
	ph.Window = time.Since(start)
	ph.Asked, ph.Failed = asked.Load(), failed.Load()

	for _, g := range goods {
		if err := s.waitRunning(ctx, g.name, 2*time.Minute); err != nil {
			return ph, err
		}
		at, _ := s.runningAt(g.name)
		if g.burst {
			ph.BurstStarts = append(ph.BurstStarts, at.Sub(g.created))
		} else {
			ph.Starts = append(ph.Starts, at.Sub(g.created))
		}
	}
	s.phases++
	if len(burst) > 0 && burst[0].Labels[abuse.StormLabel] != "" {
		list, err := s.pods.List(ctx, s.ns, metav1.ListOptions{LabelSelector: abuse.StormLabel})
		if err != nil {
			return ph, err
		}
		for _, p := range list.Items {
			for _, cs := range p.Status.ContainerStatuses {
				ph.Attempts += int(cs.RestartCount) + 1
				ph.MaxRestarts = max(ph.MaxRestarts, int(cs.RestartCount))
			}
		}
		ph.AllowedRestarts = abuse.MaxRestarts(int(time.Since(start).Seconds()))
	}
	s.log.Info("phase", "name", name, "kubelet+dockerd cores", fmt.Sprintf("%.3f", ph.Cores(ph.Kubelet+ph.Dockerd)),
		"good p50", stats.Summarize(ph.Starts).P50, "neighbour failed", ph.Failed, "attempts", ph.Attempts)
	return ph, nil
}
