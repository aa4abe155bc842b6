package schedsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/procstat"
	mclient "minik8s.io/shared/client"
)

// Config says what to measure.
type Config struct {
	Workdir   string
	APIServer string // prebuilt apiserver; empty builds one
	AMQPURL   string
	// NodeCounts runs the whole measurement once per count, each on a fresh apiserver.
	NodeCounts []int
	Pods       int
	// Clients create pods concurrently; BindWorkers bind concurrently in the baseline, as the
	// scheduler's pool does.
	Clients     int
	BindWorkers int
	// ProfileDir, when set, receives scheduler-<nodes>.pprof: 5 s of the scheduler's CPU
	// profile, taken while it binds.
	ProfileDir string
	// Rounds repeats the whole measurement of each node count, each round on a fresh cluster
	// (baseline, then scheduler), so the report can give the median ratio: the baseline alone
	// moves by several percent from one run to the next on a shared two-core machine.
	Rounds int
}

// Defaults are the figures of docs/benchmarks.md.
var Defaults = Config{AMQPURL: "amqp://guest:guest@127.0.0.1:5672/", NodeCounts: []int{1000, 5000},
	Pods: 10000, Clients: 16, BindWorkers: 64, Rounds: 1}

// Phase is the measurement of one node count.
type Phase struct {
	Nodes     int
	Round     int           // 1-based
	Register  time.Duration // hollow nodes registered and listed
	Baseline  Result
	Scheduler Result
}

// Report is the whole run.
type Report struct {
	Config Config
	Phases []Phase
}

type child struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func startChild(dir, name, bin string, args ...string) (*child, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := &child{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr = f, f
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { _ = c.cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func goBuild(ctx context.Context, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// Run builds the binaries and measures every node count in turn.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Report, error) {
	var err error
	if cfg.APIServer == "" {
		log.Info("building apiserver")
		if cfg.APIServer, err = cluster.Build(ctx, cfg.Workdir, false); err != nil {
			return nil, err
		}
	}
	sched, hollow := filepath.Join(cfg.Workdir, "scheduler"), filepath.Join(cfg.Workdir, "hollow-node")
	log.Info("building scheduler and hollow-node")
	if err := goBuild(ctx, sched, "minik8s.io/scheduler/cmd/scheduler"); err != nil {
		return nil, err
	}
	if err := goBuild(ctx, hollow, "minik8s.io/kubelet/cmd/hollow-node"); err != nil {
		return nil, err
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	rep := &Report{Config: cfg}
	for _, n := range cfg.NodeCounts {
		for round := 1; round <= max(cfg.Rounds, 1); round++ {
			ph, err := runPhase(ctx, cfg, n, round, sched, hollow, log.With("nodes", n, "round", round))
			if err != nil {
				return rep, fmt.Errorf("%d nodes, round %d: %w", n, round, err)
			}
			rep.Phases = append(rep.Phases, ph)
		}
	}
	return rep, nil
}

func runPhase(ctx context.Context, cfg Config, nodes, round int, schedBin, hollowBin string, log *slog.Logger) (ph Phase, err error) {
	ph.Nodes, ph.Round = nodes, round
	dir := filepath.Join(cfg.Workdir, fmt.Sprintf("nodes-%d-round-%d", nodes, round))
	// Each phase's cluster gets a vhost of its own: a durable `scheduler` queue shared with
	// the previous phase (or make up's cluster) would feed this scheduler pods of another
	// cluster, whose resourceVersions mean nothing here.
	amqpURL, dropVHost, err := cluster.VHost(ctx, cfg.AMQPURL, fmt.Sprintf("minik8s-bench-%d-%d", nodes, time.Now().Unix()))
	if err != nil {
		return ph, err
	}
	defer dropVHost()
	proc, err := cluster.Start(ctx, cluster.Options{Binary: cfg.APIServer, Home: filepath.Join(dir, "home"), AMQPURL: amqpURL,
		// Thousands of simulated nodes need more /24 blocks than 10.244.0.0/16 has.
		ExtraArgs: []string{"--cluster-cidr", "100.64.0.0/10"}})
	if err != nil {
		return ph, err
	}
	defer func() { _ = proc.Stop(30 * time.Second) }()
	api, err := proc.Client(time.Minute)
	if err != nil {
		return ph, err
	}
	nodeAPI := mclient.MustFor[*corev1.Node, *corev1.NodeList](api)
	pods := mclient.MustFor[*corev1.Pod, *corev1.PodList](api)

	start := time.Now()
	hollow, err := startChild(dir, "hollow-node", hollowBin, "--kubeconfig", proc.Kubeconfig,
		"--nodes", strconv.Itoa(nodes), "--workers", "16")
	if err != nil {
		return ph, err
	}
	defer hollow.stop()
	names, err := waitNodes(ctx, nodeAPI, nodes, hollow)
	if err != nil {
		return ph, err
	}
	ph.Register = time.Since(start)
	log.Info("hollow nodes ready", "took", ph.Register)

	ps := procs{apiserver: proc.Pid, hollow: hollow.cmd.Process.Pid, rabbit: procstat.FindProcesses("beam.smp")}
	// Baseline: the benchmark binds each pod to a random node as soon as it is created.
	if ph.Baseline, err = measure(ctx, cfg, api, pods, ps, "base", func(ctx context.Context, p *corev1.Pod) error {
		return bind(ctx, api, pods, p, names[rand.IntN(len(names))])
	}); err != nil {
		return ph, fmt.Errorf("baseline: %w", err)
	}
	log.Info("baseline done", "pods_per_s", ph.Baseline.PodsPerSecond(), "latency", ph.Baseline.Latency.String())

	schedArgs := []string{"--kubeconfig", filepath.Join(dir, "home", "kubeconfigs", "scheduler.kubeconfig"),
		"--amqp-url", amqpURL, "--leader-elect=false"}
	var debugAddr string
	if cfg.ProfileDir != "" {
		if debugAddr, err = freeAddr(); err != nil {
			return ph, err
		}
		schedArgs = append(schedArgs, "--debug-address", debugAddr)
	}
	sched, err := startChild(dir, "scheduler", schedBin, schedArgs...)
	if err != nil {
		return ph, err
	}
	defer sched.stop()
	if err := waitLog(ctx, filepath.Join(dir, "scheduler.log"), "caches synced", sched); err != nil {
		return ph, err
	}
	if debugAddr != "" {
		go profile(ctx, "http://"+debugAddr+"/debug/pprof/profile?seconds=5",
			filepath.Join(cfg.ProfileDir, profileName(nodes, round)), log)
	}
	ps.scheduler = sched.cmd.Process.Pid
	if ph.Scheduler, err = measure(ctx, cfg, api, pods, ps, "sched", nil); err != nil {
		return ph, fmt.Errorf("scheduler: %w", err)
	}
	log.Info("scheduler done", "pods_per_s", ph.Scheduler.PodsPerSecond(), "latency", ph.Scheduler.Latency.String())
	return ph, nil
}

// profileName is scheduler-<nodes>.pprof, with -round-<r> after the first round.
func profileName(nodes, round int) string {
	if round > 1 {
		return fmt.Sprintf("scheduler-%d-round-%d.pprof", nodes, round)
	}
	return fmt.Sprintf("scheduler-%d.pprof", nodes)
}

func waitNodes(ctx context.Context, nodes *mclient.Typed[*corev1.Node, *corev1.NodeList], want int, hollow *child) ([]string, error) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		list, err := nodes.List(ctx, "", metav1.ListOptions{LabelSelector: "minik8s.io/hollow=true"})
		if err == nil && len(list.Items) == want {
			names := make([]string, len(list.Items))
			for i, n := range list.Items {
				names[i] = n.Name
			}
			return names, nil
		}
		if hollow.exited() {
			return nil, errors.New("hollow-node exited; see hollow-node.log")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("hollow nodes not registered in time (last err %v)", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func waitLog(ctx context.Context, path, line string, c *child) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), line) {
			return nil
		}
		if c.exited() {
			return fmt.Errorf("%s exited; see %s", c.name, path)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not log %q in time; see %s", c.name, line, path)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func bind(ctx context.Context, api *mclient.Client, pods *mclient.Typed[*corev1.Pod, *corev1.PodList], p *corev1.Pod, node string) error {
	b := &corev1.Binding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}
	_, err := api.Post().Resource(pods.Resource(), p.Namespace, p.Name, "binding").Body(b).Do(ctx)
	return err
}

func newPod(name string) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "schedbench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
}

// measure creates cfg.Pods pods named <prefix>-<i> with cfg.Clients goroutines and waits for
// a watch to see each bound. With bindFn nil the scheduler binds; otherwise BindWorkers
// goroutines call bindFn on every created pod.
func measure(ctx context.Context, cfg Config, api *mclient.Client, pods *mclient.Typed[*corev1.Pod, *corev1.PodList],
	ps procs, prefix string, bindFn func(context.Context, *corev1.Pod) error) (Result, error) {
	tl := newTimeline(cfg.Pods)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := pods.Watch(wctx, "default", metav1.ListOptions{LabelSelector: "app=schedbench"})
	if err != nil {
		return Result{}, fmt.Errorf("watch pods: %w", err)
	}
	defer w.Stop()
	watchDone := make(chan error, 1)
	go func() { watchDone <- follow(w, prefix+"-", tl) }()

	cpuFrom := ps.sample()
	idx := make(chan int)
	created := make(chan *corev1.Pod, 1024)
	errs := make(chan error, cfg.Clients+cfg.BindWorkers)
	var creators, binders sync.WaitGroup
	for range cfg.Clients {
		creators.Add(1)
		go func() {
			defer creators.Done()
			for i := range idx {
				name := fmt.Sprintf("%s-%d", prefix, i)
				tl.sent(name, time.Now())
				p, err := pods.Create(ctx, newPod(name), metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("create %s: %w", name, err)
					return
				}
				if bindFn != nil {
					created <- p
				}
			}
		}()
	}
	if bindFn != nil {
		for range cfg.BindWorkers {
			binders.Add(1)
			go func() {
				defer binders.Done()
				failed := false
				for p := range created {
					// After a failure keep draining, so no creator blocks on a full channel.
					if failed {
						continue
					}
					if err := bindFn(ctx, p); err != nil {
						errs <- fmt.Errorf("bind %s: %w", p.Name, err)
						failed = true
					}
				}
			}()
		}
	}
	var firstErr error
feed:
	for i := range cfg.Pods {
		select {
		case idx <- i:
		case firstErr = <-errs:
			break feed
		case <-ctx.Done():
			firstErr = ctx.Err()
			break feed
		}
	}
	close(idx)
	creators.Wait()
	close(created)
	binders.Wait()
	if firstErr == nil {
		select {
		case firstErr = <-errs:
		default:
		}
	}
	if firstErr != nil {
		return Result{}, firstErr
	}
	select {
	case <-tl.done:
	case err := <-watchDone:
		return Result{}, fmt.Errorf("pod watch ended early: %w", err)
	case <-ctx.Done():
		r := tl.result()
		return Result{}, fmt.Errorf("only %d of %d pods bound (unbound: %s): %w", r.Pods, cfg.Pods, unbound(pods, prefix), ctx.Err())
	}
	res := tl.result()
	res.CPU = perPod(cpuFrom, ps.sample(), res.Pods)
	return res, nil
}

// follow records the first event that shows each pod of the phase with a node.
func follow(w watch.Interface, prefix string, tl *timeline) error {
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return fmt.Errorf("watch error: %v", ev.Object)
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" || !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		tl.sawBound(p.Name, time.Now())
	}
	return errors.New("result channel closed")
}

// unbound names (some of) the pods the API still shows without a node, for the error that
// says the run did not finish: the first thing to look for in the scheduler's log.
func unbound(pods *mclient.Typed[*corev1.Pod, *corev1.PodList], prefix string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := pods.List(ctx, "default", metav1.ListOptions{LabelSelector: "app=schedbench"})
	if err != nil {
		return "list failed: " + err.Error()
	}
	var names []string
	for _, p := range list.Items {
		if p.Spec.NodeName == "" && strings.HasPrefix(p.Name, prefix+"-") {
			names = append(names, p.Name)
		}
	}
	if len(names) > 10 {
		names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
	}
	return strings.Join(names, ", ")
}

// freeAddr is a loopback address with a port nothing listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// profile fetches a CPU profile from url into path, logging what it did.
func profile(ctx context.Context, url, path string, log *slog.Logger) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err == nil {
		var resp *http.Response
		if resp, err = http.DefaultClient.Do(req); err == nil {
			defer resp.Body.Close()
			var f *os.File
			if f, err = os.Create(path); err == nil {
				_, err = io.Copy(f, resp.Body)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
		}
	}
	if err != nil {
		log.Warn("profile", "path", path, "err", err)
		return
	}
	log.Info("profile written", "path", path)
}
