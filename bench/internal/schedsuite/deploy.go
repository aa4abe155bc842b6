package schedsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/shared/apierror"
	mclient "minik8s.io/shared/client"
	"minik8s.io/shared/kubeconfig"
)

// DeployConfig says what the deployments suite measures: one Deployment of Replicas pods on
// Nodes hollow nodes, against the same number of pods created directly (Clients at a time),
// both scheduled by the real scheduler and reported Running and Ready by the hollow nodes.
type DeployConfig struct {
	Workdir   string
	APIServer string // prebuilt apiserver; empty builds one
	AMQPURL   string
	Nodes     int
	Replicas  int
	Clients   int
	// Rounds alternate which of the two goes first, on one cluster.
	Rounds int
	// Real also measures RealReplicas real pods (RealImage) the same two ways on the cluster
	// make up runs (Kubeconfig; empty is the default path), in namespaces of their own.
	Real         bool
	RealReplicas int
	RealImage    string
	Kubeconfig   string
	// ProfileDir, when set, gets each hollow-node measurement's cost by process (CPU,
	// apiserver requests, syncs; printed with the report) and 1 s CPU profiles of the
	// apiserver, scheduler and controller-manager from its last pod created,
	// <namespace>-<process>.pprof.
	ProfileDir string
	// ProfileWhole, when positive, profiles that many seconds from each measurement's start
	// instead.
	ProfileWhole int
	// StatefulSet, when set (Parallel or OrderedReady), measures a StatefulSet of that pod
	// management policy in place of the Deployment.
	StatefulSet string
	probe       *deployProbe
	// template makes the pods of a measurement (newPod when nil).
	template func(name string) *corev1.Pod
}

// DeployDefaults are the figures of docs/benchmarks.md.
var DeployDefaults = DeployConfig{AMQPURL: Defaults.AMQPURL, Nodes: 100, Replicas: 1000, Clients: 16, Rounds: 2,
	Real: true, RealReplicas: 50, RealImage: "minik8s/echo:1.0"}

// DeployRound is one measurement of both ways.
type DeployRound struct {
	// Direct is the pods created by Clients goroutines; Deployment the Deployment's pods.
	// Each runs from the first create to the last pod seen Ready; DeploymentAvailable to the
	// Deployment's status showing every replica available.
	Direct, Deployment, DeploymentAvailable time.Duration
	// DirectCreated and DeploymentCreated run to the watch showing the last pod created.
	DirectCreated, DeploymentCreated time.Duration
	DeploymentFirst                  bool
	// DirectCost and DeploymentCost are filled with DeployConfig.ProfileDir.
	DirectCost, DeploymentCost DeployCost
}

// Ratio is the Deployment's time to all pods Ready over the direct creation's.
func (r DeployRound) Ratio() float64 {
	if r.Direct <= 0 {
		return 0
	}
	return r.Deployment.Seconds() / r.Direct.Seconds()
}

// DeployReport is the whole run: the hollow-node rounds, and the real pods' on make up's
// cluster when asked for.
type DeployReport struct {
	Config     DeployConfig
	Register   time.Duration
	Rounds     []DeployRound
	RealNode   string
	RealRounds []DeployRound
}

// RunDeployments starts an apiserver, hollow nodes, the scheduler and the controller-manager
// (deployment and replicaset controllers only), and measures each round.
func RunDeployments(ctx context.Context, cfg DeployConfig, log *slog.Logger) (*DeployReport, error) {
	var err error
	if cfg.APIServer == "" {
		log.Info("building apiserver")
		if cfg.APIServer, err = cluster.Build(ctx, cfg.Workdir, cfg.ProfileDir != ""); err != nil {
			return nil, err
		}
	}
	bins := map[string]string{"scheduler": "minik8s.io/scheduler/cmd/scheduler", "hollow-node": "minik8s.io/kubelet/cmd/hollow-node",
		"controller-manager": "minik8s.io/controller/cmd/controller-manager"}
	for name, pkg := range bins {
		log.Info("building " + name)
		if err := goBuild(ctx, filepath.Join(cfg.Workdir, name), pkg); err != nil {
			return nil, err
		}
	}
	dir := cfg.Workdir
	amqpURL, dropVHost, err := cluster.VHost(ctx, cfg.AMQPURL, fmt.Sprintf("minik8s-bench-deploy-%d", time.Now().Unix()))
	if err != nil {
		return nil, err
	}
	defer dropVHost()
	home := filepath.Join(dir, "home")
	proc, err := cluster.Start(ctx, cluster.Options{Binary: cfg.APIServer, Home: home, AMQPURL: amqpURL, Pprof: cfg.ProfileDir != ""})
	if err != nil {
		return nil, err
	}
	defer func() { _ = proc.Stop(30 * time.Second) }()
	api, err := proc.Client(time.Minute)
	if err != nil {
		return nil, err
	}
	rep := &DeployReport{Config: cfg}
	start := time.Now()
	hollow, err := startChild(dir, "hollow-node", filepath.Join(dir, "hollow-node"), "--kubeconfig", proc.Kubeconfig,
		"--nodes", fmt.Sprint(cfg.Nodes), "--workers", "16")
	if err != nil {
		return nil, err
	}
	defer hollow.stop()
	if _, err := waitNodes(ctx, mclient.MustFor[*corev1.Node, *corev1.NodeList](api), cfg.Nodes, hollow); err != nil {
		return nil, err
	}
	rep.Register = time.Since(start)
	kc := func(name string) string { return filepath.Join(home, "kubeconfigs", name+".kubeconfig") }
	// Without ProfileDir the scheduler and controller-manager serve nothing besides their work.
	var probe *deployProbe
	serveArgs := func(string) []string { return []string{"--metrics-address="} }
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
		probe = &deployProbe{dir: cfg.ProfileDir, api: api, log: log, pids: map[string]int{"apiserver": proc.Pid, "hollow-node": hollow.cmd.Process.Pid},
			pprof: map[string]string{}, metrics: map[string]string{}}
		if proc.PprofURL != "" {
			probe.pprof["apiserver"] = proc.PprofURL
		}
		serveArgs = func(name string) []string {
			maddr, err1 := freeAddr()
			daddr, err2 := freeAddr()
			if err1 != nil || err2 != nil {
				return []string{"--metrics-address="}
			}
			probe.metrics[name], probe.pprof[name] = "http://"+maddr+"/metrics", "http://"+daddr+"/debug/pprof"
			return []string{"--metrics-address", maddr, "--debug-address", daddr}
		}
	}
	sched, err := startChild(dir, "scheduler", filepath.Join(dir, "scheduler"), append([]string{"--kubeconfig", kc("scheduler"),
		"--amqp-url", amqpURL, "--leader-elect=false"}, serveArgs("scheduler")...)...)
	if err != nil {
		return nil, err
	}
	defer sched.stop()
	cm, err := startChild(dir, "controller-manager", filepath.Join(dir, "controller-manager"), append([]string{"--kubeconfig", kc("controller-manager"),
		"--amqp-url", amqpURL, "--leader-elect=false", "--controllers", "deployment,replicaset,statefulset"}, serveArgs("controller-manager")...)...)
	if err != nil {
		return nil, err
	}
	defer cm.stop()
	if probe != nil {
		probe.pids["scheduler"], probe.pids["controller-manager"] = sched.cmd.Process.Pid, cm.cmd.Process.Pid
		cfg.probe = probe
	}
	if err := waitLog(ctx, filepath.Join(dir, "scheduler.log"), "caches synced", sched); err != nil {
		return nil, err
	}
	if err := waitLog(ctx, filepath.Join(dir, "controller-manager.log"), "controller=deployment", cm); err != nil {
		return nil, err
	}
	rep.Rounds, err = deployRounds(ctx, api, cfg, "", log)
	if err != nil || !cfg.Real {
		return rep, err
	}
	return rep, runReal(ctx, cfg, rep, log)
}

// runReal measures the real pods on make up's cluster.
func runReal(ctx context.Context, cfg DeployConfig, rep *DeployReport, log *slog.Logger) error {
	path := cfg.Kubeconfig
	if path == "" {
		path = kubeconfig.DefaultPath()
	}
	ccfg, err := mclient.FromKubeconfig(path)
	if err != nil {
		return fmt.Errorf("the deployments suite's real pods run on make up's cluster, which must be running: %w", err)
	}
	api, err := mclient.New(ccfg)
	if err != nil {
		return err
	}
	nodes, err := mclient.MustFor[*corev1.Node, *corev1.NodeList](api).List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("the deployments suite's real pods run on make up's cluster, which must be running: %w", err)
	}
	for _, n := range nodes.Items {
		rep.RealNode += n.Name + " "
	}
	rep.RealNode = strings.TrimSpace(rep.RealNode)
	real := cfg
	real.Replicas = cfg.RealReplicas
	real.probe = nil
	real.template = func(name string) *corev1.Pod {
		grace := int64(1)
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "deploybench"}},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{Name: "echo", Image: cfg.RealImage}}},
		}
	}
	log.Info("real pods on make up's cluster", "nodes", rep.RealNode, "pods", real.Replicas)
	rep.RealRounds, err = deployRounds(ctx, api, real, fmt.Sprintf("bench-deploy-%d-", time.Now().Unix()), log)
	return err
}

// deployRounds measures cfg.Rounds rounds, namespaces named prefix + direct-<i> and
// deploy-<i>.
func deployRounds(ctx context.Context, api *mclient.Client, cfg DeployConfig, prefix string, log *slog.Logger) ([]DeployRound, error) {
	var rounds []DeployRound
	for i := range cfg.Rounds {
		r := DeployRound{DeploymentFirst: i%2 == 1}
		// Each measurement's namespace goes before the next starts, so every one starts from
		// an empty cluster (and the hollow nodes never fill up).
		direct := func() error {
			ns := fmt.Sprintf("%sdirect-%d", prefix, i)
			d, made, cost, err := directPods(ctx, api, cfg, ns)
			r.Direct, r.DirectCreated, r.DirectCost = d, made, cost
			if cfg.probe != nil {
				cfg.probe.wait()
			}
			return errors.Join(err, dropNamespace(ctx, api, ns))
		}
		deploy := func() error {
			ns := fmt.Sprintf("%sdeploy-%d", prefix, i)
			measure := deployPods
			if cfg.StatefulSet != "" {
				measure = statefulSetPods
			}
			d, made, avail, cost, err := measure(ctx, api, cfg, ns)
			r.Deployment, r.DeploymentCreated, r.DeploymentAvailable, r.DeploymentCost = d, made, avail, cost
			if cfg.probe != nil {
				cfg.probe.wait()
			}
			return errors.Join(err, dropNamespace(ctx, api, ns))
		}
		steps := []func() error{direct, deploy}
		if r.DeploymentFirst {
			steps = []func() error{deploy, direct}
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return rounds, fmt.Errorf("round %d: %w", i+1, err)
			}
		}
		log.Info("round done", "round", i+1, "pods", cfg.Replicas, "direct", r.Direct, "deployment", r.Deployment, "ratio", fmt.Sprintf("%.2f", r.Ratio()))
		rounds = append(rounds, r)
	}
	return rounds, nil
}

func (cfg DeployConfig) pod(name string) *corev1.Pod {
	if cfg.template != nil {
		return cfg.template(name)
	}
	return newPod(name)
}

// benchNamespace makes a namespace for one measurement, so each one's pods are apart.
func benchNamespace(ctx context.Context, api *mclient.Client, name string) error {
	_, err := mclient.MustFor[*corev1.Namespace, *corev1.NamespaceList](api).Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// dropNamespace deletes ns and waits until it is gone with its pods.
func dropNamespace(ctx context.Context, api *mclient.Client, ns string) error {
	nss := mclient.MustFor[*corev1.Namespace, *corev1.NamespaceList](api)
	if err := nss.Delete(ctx, "", ns, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		_, err := nss.Get(ctx, "", ns, metav1.GetOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("namespace %s not gone in 5 minutes (last err %v)", ns, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// readyWatch waits until want pods of ns are Ready; it returns when the last was seen.
type readyWatch struct {
	w    watch.Interface
	done chan struct{}
	mu   sync.Mutex
	seen map[string]bool
	last time.Time
	err  error
	// created holds when the watch first showed the 1st, the half-way and the last pod.
	created []time.Time
	exist   map[string]bool
}

// watchReady watches ns until want pods are Ready; allCreated, when not nil, is called once
// the watch has shown want pods.
func watchReady(ctx context.Context, api *mclient.Client, ns string, want int, allCreated func()) (*readyWatch, error) {
	w, err := mclient.MustFor[*corev1.Pod, *corev1.PodList](api).Watch(ctx, ns, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	rw := &readyWatch{w: w, done: make(chan struct{}), seen: map[string]bool{}, exist: map[string]bool{}}
	go func() {
		defer close(rw.done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				rw.err = fmt.Errorf("watch error: %v", ev.Object)
				return
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			rw.mu.Lock()
			if !rw.exist[p.Name] {
				rw.exist[p.Name] = true
				if n := len(rw.exist); n == 1 || n == want/2 || n == want {
					rw.created = append(rw.created, time.Now())
					if n == want && allCreated != nil {
						allCreated()
					}
				}
			}
			rw.mu.Unlock()
			if !podReady(p) {
				continue
			}
			rw.mu.Lock()
			if !rw.seen[p.Name] {
				rw.seen[p.Name], rw.last = true, time.Now()
			}
			n := len(rw.seen)
			rw.mu.Unlock()
			if n == want {
				return
			}
		}
		rw.err = errors.New("pod watch ended early")
	}()
	return rw, nil
}

// wait returns when the last pod was seen Ready and when the last was seen at all.
func (rw *readyWatch) wait(ctx context.Context) (ready, created time.Time, err error) {
	defer rw.w.Stop()
	select {
	case <-rw.done:
		rw.mu.Lock()
		defer rw.mu.Unlock()
		if n := len(rw.created); n > 0 {
			created = rw.created[n-1]
		}
		return rw.last, created, rw.err
	case <-ctx.Done():
		rw.mu.Lock()
		defer rw.mu.Unlock()
		return time.Time{}, time.Time{}, fmt.Errorf("%d pods ready: %w", len(rw.seen), ctx.Err())
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// probeStart samples the processes before a measurement in ns when the suite probes them:
// allCreated starts the tail profiles, finish samples again and returns the cost between.
func (cfg DeployConfig) probeStart(ctx context.Context, ns string) (allCreated func(), finish func() DeployCost) {
	p := cfg.probe
	if p == nil {
		return nil, func() DeployCost { return DeployCost{} }
	}
	from := p.sample(ctx)
	if cfg.ProfileWhole > 0 {
		p.profile(ns, cfg.ProfileWhole)
		return nil, func() DeployCost { return from.cost(p.sample(ctx)) }
	}
	return func() { p.profile(ns, 1) }, func() DeployCost { return from.cost(p.sample(ctx)) }
}

// directPods creates cfg.Replicas pods with cfg.Clients goroutines and returns the time from
// the first create to the last pod Ready, and to the last pod seen created.
func directPods(ctx context.Context, api *mclient.Client, cfg DeployConfig, ns string) (ready, created time.Duration, cost DeployCost, err error) {
	if err := benchNamespace(ctx, api, ns); err != nil {
		return 0, 0, cost, err
	}
	allCreated, finish := cfg.probeStart(ctx, ns)
	rw, err := watchReady(ctx, api, ns, cfg.Replicas, allCreated)
	if err != nil {
		return 0, 0, cost, err
	}
	pods := mclient.MustFor[*corev1.Pod, *corev1.PodList](api)
	idx := make(chan int)
	errs := make(chan error, cfg.Clients)
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				p := cfg.pod(fmt.Sprintf("pod-%d", i))
				p.Namespace = ns
				if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var firstErr error
feed:
	for i := range cfg.Replicas {
		select {
		case idx <- i:
		case firstErr = <-errs:
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		return 0, 0, cost, fmt.Errorf("create pods: %w", firstErr)
	}
	last, made, err := rw.wait(ctx)
	if err != nil {
		return 0, 0, cost, err
	}
	return last.Sub(start), made.Sub(start), finish(), nil
}

// deployPods creates one Deployment of cfg.Replicas and returns the time to its last pod
// Ready, to the last pod seen created, and to its status showing them all available.
func deployPods(ctx context.Context, api *mclient.Client, cfg DeployConfig, ns string) (ready, created, available time.Duration, cost DeployCost, err error) {
	if err := benchNamespace(ctx, api, ns); err != nil {
		return 0, 0, 0, cost, err
	}
	allCreated, finish := cfg.probeStart(ctx, ns)
	rw, err := watchReady(ctx, api, ns, cfg.Replicas, allCreated)
	if err != nil {
		return 0, 0, 0, cost, err
	}
	ds := mclient.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](api)
	tmpl := cfg.pod("")
	n := int32(cfg.Replicas)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec},
		},
	}
	dw, err := ds.Watch(ctx, ns, metav1.ListOptions{})
	if err != nil {
		return 0, 0, 0, cost, err
	}
	defer dw.Stop()
	start := time.Now()
	if _, err := ds.Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return 0, 0, 0, cost, fmt.Errorf("create deployment: %w", err)
	}
	last, made, err := rw.wait(ctx)
	if err != nil {
		return 0, 0, 0, cost, err
	}
	for ev := range dw.ResultChan() {
		if got, ok := ev.Object.(*appsv1.Deployment); ok && got.Status.AvailableReplicas == n && got.Status.ObservedGeneration >= got.Generation {
			// Sampled after the status, whose writes are the Deployment's cost too.
			available := time.Since(start)
			return last.Sub(start), made.Sub(start), available, finish(), nil
		}
	}
	return 0, 0, 0, cost, errors.New("deployment watch ended before every replica was available")
}

// Print writes the report as Markdown.
func (r *DeployReport) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "%d pods on %d hollow nodes (registered in %s), real scheduler and controller-manager; direct: %d clients creating pods.\n\n",
		c.Replicas, c.Nodes, r.Register.Round(time.Millisecond), c.Clients)
	printRounds(w, c.workload(), r.Rounds)
	printCosts(w, r.Rounds)
	if len(r.RealRounds) > 0 {
		fmt.Fprintf(w, "\n%d pods of %s on make up's cluster (nodes: %s), as make up runs it.\n\n", c.RealReplicas, c.RealImage, r.RealNode)
		printRounds(w, c.workload(), r.RealRounds)
	}
}

func printRounds(w io.Writer, kind string, rounds []DeployRound) {
	fmt.Fprintf(w, "| Round | first | direct: all created | direct: all Ready | %[1]s: all created | %[1]s: all Ready | %[1]s status: all available | ratio (all Ready) |\n", kind)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var ratios []float64
	for i, rd := range rounds {
		first := "direct"
		if rd.DeploymentFirst {
			first = kind
		}
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %.2fx |\n", i+1, first, ms(rd.DirectCreated), ms(rd.Direct),
			ms(rd.DeploymentCreated), ms(rd.Deployment), ms(rd.DeploymentAvailable), rd.Ratio())
		ratios = append(ratios, rd.Ratio())
	}
	if len(ratios) > 0 {
		fmt.Fprintf(w, "\nMedian ratio (%s over direct): %.2fx (goal ≤ 1.2x).\n", kind, median(ratios))
	}
}
