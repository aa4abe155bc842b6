package schedsuite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	mclient "minik8s.io/shared/client"
)

// DaemonSetConfig says what the daemonsets suite measures: one DaemonSet on Nodes hollow
// nodes (a pod each), against the same pods created directly by Clients goroutines, each
// pinned to its node by the same required node affinity the DaemonSet controller writes;
// both scheduled by the real scheduler and reported Ready by the hollow nodes.
type DaemonSetConfig struct {
	Workdir   string
	APIServer string // prebuilt apiserver; empty builds one
	AMQPURL   string
	Nodes     int
	Clients   int
	// Rounds alternate which of the two goes first, on one cluster.
	Rounds int
}

// DaemonSetDefaults are the figures of docs/benchmarks.md.
var DaemonSetDefaults = DaemonSetConfig{AMQPURL: Defaults.AMQPURL, Nodes: 1000, Clients: 16, Rounds: 2}

// DaemonSetRound is one measurement of both ways: from the first create to the last pod seen
// Ready, and for the DaemonSet to its status showing every pod available.
type DaemonSetRound struct {
	Direct, DaemonSet, DaemonSetAvailable time.Duration
	DaemonSetFirst                        bool
}

// DaemonSetReport is the whole run.
type DaemonSetReport struct {
	Config   DaemonSetConfig
	Register time.Duration
	Rounds   []DaemonSetRound
}

// RunDaemonSets starts an apiserver, hollow nodes, the scheduler and the controller-manager
// (daemonset controller only), and measures each round.
func RunDaemonSets(ctx context.Context, cfg DaemonSetConfig, log *slog.Logger) (*DaemonSetReport, error) {
	var err error
	if cfg.APIServer == "" {
		log.Info("building apiserver")
		if cfg.APIServer, err = cluster.Build(ctx, cfg.Workdir, false); err != nil {
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
	amqpURL, dropVHost, err := cluster.VHost(ctx, cfg.AMQPURL, fmt.Sprintf("minik8s-bench-ds-%d", time.Now().Unix()))
	if err != nil {
		return nil, err
	}
	defer dropVHost()
	home := filepath.Join(dir, "home")
	proc, err := cluster.Start(ctx, cluster.Options{Binary: cfg.APIServer, Home: home, AMQPURL: amqpURL,
		// A thousand simulated nodes need more /24 blocks than 10.244.0.0/16 has.
		ExtraArgs: []string{"--cluster-cidr", "100.64.0.0/10"}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = proc.Stop(30 * time.Second) }()
	api, err := proc.Client(time.Minute)
	if err != nil {
		return nil, err
	}
	rep := &DaemonSetReport{Config: cfg}
	start := time.Now()
	hollow, err := startChild(dir, "hollow-node", filepath.Join(dir, "hollow-node"), "--kubeconfig", proc.Kubeconfig,
		"--nodes", fmt.Sprint(cfg.Nodes), "--workers", "16")
	if err != nil {
		return nil, err
	}
	defer hollow.stop()
	nodes, err := waitNodes(ctx, mclient.MustFor[*corev1.Node, *corev1.NodeList](api), cfg.Nodes, hollow)
	if err != nil {
		return nil, err
	}
	rep.Register = time.Since(start)
	kc := func(name string) string { return filepath.Join(home, "kubeconfigs", name+".kubeconfig") }
	sched, err := startChild(dir, "scheduler", filepath.Join(dir, "scheduler"), "--kubeconfig", kc("scheduler"),
		"--amqp-url", amqpURL, "--leader-elect=false", "--metrics-address=")
	if err != nil {
		return nil, err
	}
	defer sched.stop()
	cm, err := startChild(dir, "controller-manager", filepath.Join(dir, "controller-manager"), "--kubeconfig", kc("controller-manager"),
		"--amqp-url", amqpURL, "--leader-elect=false", "--controllers", "daemonset", "--metrics-address=")
	if err != nil {
		return nil, err
	}
	defer cm.stop()
	if err := waitLog(ctx, filepath.Join(dir, "scheduler.log"), "caches synced", sched); err != nil {
		return nil, err
	}
	if err := waitLog(ctx, filepath.Join(dir, "controller-manager.log"), "controller=daemonset", cm); err != nil {
		return nil, err
	}
	for i := range cfg.Rounds {
		r := DaemonSetRound{DaemonSetFirst: i%2 == 1}
		direct := func() error {
			ns := fmt.Sprintf("direct-%d", i)
			d, err := pinnedPods(ctx, api, cfg, nodes, ns)
			r.Direct = d
			return errors.Join(err, dropNamespace(ctx, api, ns))
		}
		ds := func() error {
			ns := fmt.Sprintf("daemonset-%d", i)
			d, avail, err := daemonSetPods(ctx, api, len(nodes), ns)
			r.DaemonSet, r.DaemonSetAvailable = d, avail
			return errors.Join(err, dropNamespace(ctx, api, ns))
		}
		steps := []func() error{direct, ds}
		if r.DaemonSetFirst {
			steps = []func() error{ds, direct}
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return rep, fmt.Errorf("round %d: %w", i+1, err)
			}
		}
		log.Info("round done", "round", i+1, "pods", len(nodes), "direct", r.Direct, "daemonset", r.DaemonSet, "ratio", fmt.Sprintf("%.2f", r.Ratio()))
		rep.Rounds = append(rep.Rounds, r)
	}
	return rep, nil
}

// Ratio is the DaemonSet's time to all pods Ready over the direct creation's.
func (r DaemonSetRound) Ratio() float64 {
	if r.Direct <= 0 {
		return 0
	}
	return r.DaemonSet.Seconds() / r.Direct.Seconds()
}

// pinnedPod is the benchmark pod for node, with the affinity a DaemonSet's pod has.
func pinnedPod(name, node string) *corev1.Pod {
	p := newPod(name)
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	return p
}

// pinnedPods creates a pod for each node with cfg.Clients goroutines and returns the time
// from the first create to the last pod Ready.
func pinnedPods(ctx context.Context, api *mclient.Client, cfg DaemonSetConfig, nodes []string, ns string) (time.Duration, error) {
	if err := benchNamespace(ctx, api, ns); err != nil {
		return 0, err
	}
	rw, err := watchReady(ctx, api, ns, len(nodes), nil)
	if err != nil {
		return 0, err
	}
	pods := mclient.MustFor[*corev1.Pod, *corev1.PodList](api)
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				p := pinnedPod(fmt.Sprintf("pod-%d", i), nodes[i])
				p.Namespace = ns
				if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range nodes {
		idx <- i
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		return 0, fmt.Errorf("create pods: %w", firstErr)
	}
	last, _, err := rw.wait(ctx)
	if err != nil {
		return 0, err
	}
	return last.Sub(start), nil
}

// daemonSetPods creates one DaemonSet and returns the time to its last pod Ready and to its
// status showing every pod available.
func daemonSetPods(ctx context.Context, api *mclient.Client, want int, ns string) (ready, available time.Duration, err error) {
	if err := benchNamespace(ctx, api, ns); err != nil {
		return 0, 0, err
	}
	rw, err := watchReady(ctx, api, ns, want, nil)
	if err != nil {
		return 0, 0, err
	}
	dss := mclient.MustFor[*appsv1.DaemonSet, *appsv1.DaemonSetList](api)
	tmpl := newPod("")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec},
		},
	}
	dw, err := dss.Watch(ctx, ns, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	defer dw.Stop()
	start := time.Now()
	if _, err := dss.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		return 0, 0, fmt.Errorf("create daemonset: %w", err)
	}
	last, _, err := rw.wait(ctx)
	if err != nil {
		return 0, 0, err
	}
	for ev := range dw.ResultChan() {
		if got, ok := ev.Object.(*appsv1.DaemonSet); ok && got.Status.NumberAvailable == int32(want) && got.Status.ObservedGeneration >= got.Generation {
			return last.Sub(start), time.Since(start), nil
		}
	}
	return 0, 0, errors.New("daemonset watch ended before every pod was available")
}

// Print writes the report as Markdown.
func (r *DaemonSetReport) Print(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "A DaemonSet on %d hollow nodes (registered in %s), real scheduler and controller-manager; direct: %d clients creating a pod per node with the same node affinity.\n\n",
		c.Nodes, r.Register.Round(time.Millisecond), c.Clients)
	fmt.Fprintln(w, "| Round | first | direct: all Ready | DaemonSet: all Ready | DaemonSet status: all available | ratio (all Ready) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	var ratios []float64
	for i, rd := range r.Rounds {
		first := "direct"
		if rd.DaemonSetFirst {
			first = "DaemonSet"
		}
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %.2fx |\n", i+1, first, ms(rd.Direct), ms(rd.DaemonSet), ms(rd.DaemonSetAvailable), rd.Ratio())
		ratios = append(ratios, rd.Ratio())
	}
	if len(ratios) > 0 {
		fmt.Fprintf(w, "\nMedian ratio (DaemonSet over direct): %.2fx.\n", median(ratios))
	}
}
