// Command bench measures minik8s against baselines measured in the same run
// and prints Markdown tables. Suite apiserver: API create latency and
// throughput against raw etcd, and change-event latency through RabbitMQ
// against a raw etcd watch. Suite pods: pod startup latency through a
// kubelet against the same containers started directly through Docker and
// CNI. It builds and starts a private apiserver (and kubelet) and writes only
// to a temporary directory, which it removes unless -keep is given. Suite
// network: Service traffic through a ClusterIP against the pod IP, and cluster
// DNS against the node's upstream resolver, on the cluster make up runs (it
// must be running; the suite works in a namespace of its own and deletes it).
// Suite deployments: a Deployment's pods scheduled and Ready on hollow nodes
// against the same number of pods created directly, on a private cluster.
// Suite daemonsets (not in all): a DaemonSet's pods on hollow nodes against a pod per node
// created directly with the same node affinity. Suite hpa (not in all): a HorizontalPodAutoscaler's reaction to CPU load (the
// metrics API showing it, the scale decision, the new pod Ready) against a
// direct scale of the same Deployment, on the cluster make up runs. Suite storm:
// the node agents' CPU and good pods' start while 40 pods fail, against the quiet
// node, on make up's cluster. Suite badrequests: malformed writes on fresh and
// kept-alive connections, every answer counted, against as many well-formed
// reads, on make up's cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"minik8s.io/bench/internal/abusesuite"
	"minik8s.io/bench/internal/fnsuite"
	"minik8s.io/bench/internal/hpasuite"
	"minik8s.io/bench/internal/monsuite"
	"minik8s.io/bench/internal/netsuite"
	"minik8s.io/bench/internal/podsuite"
	"minik8s.io/bench/internal/schedsuite"
	"minik8s.io/bench/internal/suite"
)

func main() {
	if netsuite.IsProbe(os.Args) {
		// The network suite's measurements, run in another network namespace.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := netsuite.ProbeMain(ctx, os.Stdin, os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	cfg := suite.Defaults
	var keep bool
	var timeout time.Duration
	var logLevel, which, plegs, schedNodes string
	scfg := schedsuite.Defaults
	pcfg := podsuite.Defaults
	ncfg := netsuite.Config{Samples: netsuite.Defaults.Samples, Transfers: netsuite.Defaults.Transfers}
	dcfg := schedsuite.DeployDefaults
	dscfg := schedsuite.DaemonSetDefaults
	hcfg := hpasuite.Defaults
	mcfg := monsuite.Defaults
	fcfg := fnsuite.Defaults
	acfg := abusesuite.StormDefaults
	rcfg := abusesuite.RequestsDefaults
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	fs.StringVar(&which, "suite", "all", "which benchmarks: apiserver, pods, network (needs make up), deployments, daemonsets, scheduler (needs make down), hpa (needs make up), serverless (needs make up), storm (needs make up), badrequests (needs make up), monitoring (needs make up) or all (all but scheduler, hpa, serverless, storm, badrequests and monitoring)")
	fs.DurationVar(&mcfg.Window, "monitoring-window", mcfg.Window, "how long the monitoring suite watches the idle monitoring stack")
	ccfg := monsuite.CadvisorDefaults
	fs.IntVar(&ccfg.Pods, "cadvisor-pods", ccfg.Pods, "idle pods the monitoring suite starts before timing the kubelet's /metrics/cadvisor")
	fs.IntVar(&ccfg.Requests, "cadvisor-requests", ccfg.Requests, "requests per kubelet path in the monitoring suite")
	fs.IntVar(&acfg.Pods, "storm-pods", acfg.Pods, "pods of each kind of failure in the storm suite")
	fs.DurationVar(&acfg.Window, "storm-window", acfg.Window, "how long the storm suite measures the quiet node, then the storm")
	fs.IntVar(&rcfg.Requests, "bad-requests", rcfg.Requests, "malformed writes per connection mode in the badrequests suite")
	fs.IntVar(&rcfg.Clients, "bad-clients", rcfg.Clients, "concurrent clients in the badrequests suite")
	fs.StringVar(&schedNodes, "sched-nodes", "1000,5000", "comma-separated hollow node counts for the scheduler suite")
	fs.IntVar(&scfg.Pods, "sched-pods", scfg.Pods, "pods per run in the scheduler suite")
	fs.IntVar(&scfg.Clients, "sched-clients", scfg.Clients, "goroutines creating pods in the scheduler suite")
	fs.StringVar(&scfg.ProfileDir, "sched-profile", "", "write a 5 s CPU profile of the scheduler, taken while it binds, to this directory")
	fs.IntVar(&scfg.Rounds, "sched-rounds", scfg.Rounds, "rounds per node count in the scheduler suite, each on a fresh cluster; the report gives the median ratio")
	fs.IntVar(&dcfg.Nodes, "deploy-nodes", dcfg.Nodes, "hollow nodes in the deployments suite")
	fs.IntVar(&dcfg.Replicas, "deploy-replicas", dcfg.Replicas, "replicas of the Deployment (and pods created directly) in the deployments suite")
	fs.IntVar(&dcfg.Rounds, "deploy-rounds", dcfg.Rounds, "rounds of the deployments suite on its cluster, alternating which way goes first")
	fs.BoolVar(&dcfg.Real, "deploy-real", dcfg.Real, "the deployments suite also measures -deploy-real-replicas real pods the same way on make up's cluster (which must run)")
	fs.IntVar(&dcfg.RealReplicas, "deploy-real-replicas", dcfg.RealReplicas, "real pods per measurement in the deployments suite")
	fs.StringVar(&dcfg.StatefulSet, "deploy-statefulset", "", "the deployments suite measures a StatefulSet of this pod management policy (Parallel or OrderedReady) in place of the Deployment")
	fs.IntVar(&dcfg.ProfileWhole, "deploy-profile-whole", 0, "with -deploy-profile: profile this many seconds from each measurement's start instead of 1 s from its last pod created")
	fs.StringVar(&dcfg.ProfileDir, "deploy-profile", "", "the deployments suite splits each hollow-node measurement by process (CPU, apiserver requests, syncs) and writes 1 s CPU profiles of the apiserver, scheduler and controller-manager from its last pod created to this directory")
	fs.IntVar(&dscfg.Nodes, "ds-nodes", dscfg.Nodes, "hollow nodes in the daemonsets suite: the DaemonSet's pods, and the pods created directly")
	fs.IntVar(&dscfg.Rounds, "ds-rounds", dscfg.Rounds, "rounds of the daemonsets suite on its cluster, alternating which way goes first")
	fs.IntVar(&hcfg.Rounds, "hpa-rounds", hcfg.Rounds, "load-to-scale measurements of the hpa suite, each on a fresh Deployment")
	fs.DurationVar(&hcfg.SyncPeriod, "hpa-sync-period", hcfg.SyncPeriod, "the running controller-manager's --horizontal-pod-autoscaler-sync-period, the hpa suite's baseline for the decision")
	fs.StringVar(&fcfg.Gateway, "gateway", fcfg.Gateway, "the serverless gateway's URL for the serverless suite")
	fs.IntVar(&fcfg.Calls, "fn-calls", fcfg.Calls, "warm calls each way (gateway and direct, interleaved) in the serverless suite")
	fs.IntVar(&fcfg.ColdRounds, "fn-cold-rounds", fcfg.ColdRounds, "cold starts measured by the serverless suite")
	fs.IntVar(&fcfg.Clients, "fn-clients", fcfg.Clients, "concurrent callers in the serverless suite's saturation test")
	fs.DurationVar(&fcfg.SaturationTime, "fn-saturation-time", fcfg.SaturationTime, "length of each saturation test (gateway, then direct) in the serverless suite")
	fs.StringVar(&pcfg.Kubelet, "kubelet", "", "prebuilt kubelet binary for the pods suite (default: build one from the workspace)")
	fs.IntVar(&pcfg.Burst, "burst", pcfg.Burst, "pods created at once in the pods suite")
	fs.IntVar(&pcfg.Paced, "paced", pcfg.Paced, "pods created at -pod-rate in the pods suite")
	fs.Float64Var(&pcfg.Rate, "pod-rate", pcfg.Rate, "pods per second in the paced pod test")
	fs.StringVar(&plegs, "pleg-periods", "1s,100ms", "comma-separated kubelet --pleg-period values; the pod tests run once per value")
	fs.StringVar(&pcfg.RedisAddr, "redis-addr", pcfg.RedisAddr, "Redis the benchmark kubelet caches its pods in")
	fs.StringVar(&ncfg.Kubeconfig, "kubeconfig", "", "kubeconfig of make up's cluster for the network suite and the deployments suite's real pods (default $KUBECONFIG, else $MINIK8S_HOME/kubeconfig)")
	fs.StringVar(&ncfg.Node, "net-node", "", "node of this machine the network suite runs its pods on (default: the cluster's only node)")
	fs.IntVar(&ncfg.Samples, "net-samples", ncfg.Samples, "connections per target in the network suite's latency test, and DNS queries per query")
	fs.IntVar(&ncfg.Transfers, "net-transfers", ncfg.Transfers, "64 MiB GETs per target in the network suite's throughput test")
	fs.StringVar(&cfg.Binary, "apiserver", "", "prebuilt apiserver binary (default: build one from the workspace)")
	fs.StringVar(&cfg.AMQPURL, "amqp-url", cfg.AMQPURL, "RabbitMQ the apiserver publishes to and the benchmark consumes from")
	fs.IntVar(&cfg.Creates, "creates", cfg.Creates, "measured creates per system in the latency test")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured creates before the latency test")
	fs.IntVar(&cfg.PayloadBytes, "payload", cfg.PayloadBytes, "bytes in each ConfigMap's data value")
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients in the throughput test")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds per system in the throughput test")
	fs.DurationVar(&cfg.RoundTime, "round-time", cfg.RoundTime, "length of one throughput round")
	fs.IntVar(&cfg.EventRate, "event-rate", cfg.EventRate, "changes per second in the event test")
	fs.DurationVar(&cfg.EventTime, "event-time", cfg.EventTime, "length of the event test")
	fs.StringVar(&cfg.AuthorizationMode, "authorization-mode", "", "the apiserver suite's --authorization-mode: Node,RBAC or AlwaysAllow (default: the apiserver's, Node,RBAC)")
	fs.StringVar(&cfg.Identity, "identity", cfg.Identity, "who sends the apiserver suite's creates: admin (system:masters, never reaches RBAC) or rbac (a ServiceAccount token allowed by a RoleBinding, among -other-bindings bindings)")
	fs.IntVar(&cfg.OtherBindings, "other-bindings", cfg.OtherBindings, "with -identity rbac: RoleBindings and ClusterRoleBindings to other subjects, half of each")
	fs.BoolVar(&cfg.Audit, "audit", false, "the apiserver suite's apiserver writes an audit log (configs/audit-policy.yaml) into the work directory")
	fs.BoolVar(&cfg.Extensions, "extensions", cfg.Extensions, "the apiserver suite also runs tests 4 to 6: custom resource creates against ConfigMap creates, and one validating webhook's added latency (about 40 s more)")
	fs.BoolVar(&cfg.Profile, "profile", false, "build the apiserver with pprof and print its CPU profile of the throughput and event tests")
	fs.BoolVar(&keep, "keep", false, "keep the work directory (apiserver log, etcd data, profiles)")
	fs.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	fs.StringVar(&logLevel, "log-level", "info", "progress log level on stderr: debug, info, warn or error")
	_ = fs.Parse(os.Args[1:])
	if !slices.Contains([]string{"all", "apiserver", "pods", "network", "scheduler", "deployments", "daemonsets", "hpa", "serverless", "storm", "badrequests", "monitoring"}, which) {
		fmt.Fprintf(os.Stderr, "bench: -suite %q: want apiserver, pods, network, deployments, daemonsets, scheduler, hpa, serverless, storm, badrequests, monitoring or all\n", which)
		os.Exit(2)
	}
	if !slices.Contains([]string{"", "Parallel", "OrderedReady"}, dcfg.StatefulSet) {
		fmt.Fprintf(os.Stderr, "bench: -deploy-statefulset %q: want Parallel or OrderedReady\n", dcfg.StatefulSet)
		os.Exit(2)
	}
	if scfg.Rounds < 1 {
		fmt.Fprintf(os.Stderr, "bench: -sched-rounds %d: want at least 1\n", scfg.Rounds)
		os.Exit(2)
	}
	scfg.NodeCounts = nil
	for _, n := range strings.Split(schedNodes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil || v <= 0 {
			fmt.Fprintf(os.Stderr, "bench: -sched-nodes: %q is not a positive count\n", n)
			os.Exit(2)
		}
		scfg.NodeCounts = append(scfg.NodeCounts, v)
	}
	pcfg.PLEGPeriods = nil
	for _, p := range strings.Split(plegs, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "bench: -pleg-periods: %q is not a positive duration\n", p)
			os.Exit(2)
		}
		pcfg.PLEGPeriods = append(pcfg.PLEGPeriods, d)
	}
	pcfg.AMQPURL, pcfg.APIServer = cfg.AMQPURL, cfg.Binary
	scfg.AMQPURL, scfg.APIServer = cfg.AMQPURL, cfg.Binary
	dcfg.AMQPURL, dcfg.APIServer, dcfg.Kubeconfig = cfg.AMQPURL, cfg.Binary, ncfg.Kubeconfig
	dscfg.AMQPURL, dscfg.APIServer = cfg.AMQPURL, cfg.Binary

	var level slog.Level
	if err := level.UnmarshalText([]byte(logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "bench: --log-level: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("component", "bench")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hcfg.Kubeconfig = ncfg.Kubeconfig
	fcfg.Kubeconfig = ncfg.Kubeconfig
	acfg.Kubeconfig, rcfg.Kubeconfig = ncfg.Kubeconfig, ncfg.Kubeconfig
	if err := run(ctx, which, cfg, pcfg, scfg, ncfg, dcfg, dscfg, hcfg, fcfg, mcfg, ccfg, keep, log); err != nil {
		log.Error("benchmark failed", "err", err)
		os.Exit(1)
	}
	if err := runAbuse(ctx, which, acfg, rcfg, log); err != nil {
		log.Error("benchmark failed", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, which string, cfg suite.Config, pcfg podsuite.Config, scfg schedsuite.Config, ncfg netsuite.Config, dcfg schedsuite.DeployConfig, dscfg schedsuite.DaemonSetConfig, hcfg hpasuite.Config, fcfg fnsuite.Config, mcfg monsuite.Config, ccfg monsuite.CadvisorConfig, keep bool, log *slog.Logger) error {
	dir, err := os.MkdirTemp("", "minik8s-bench-")
	if err != nil {
		return fmt.Errorf("create work directory: %w", err)
	}
	if keep {
		log.Info("keeping work directory", "dir", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if which == "all" || which == "apiserver" {
		cfg.Workdir = filepath.Join(dir, "apiserver")
		if err := os.Mkdir(cfg.Workdir, 0o700); err != nil {
			return err
		}
		rep, err := suite.Run(ctx, cfg, log)
		if err != nil {
			return err
		}
		fmt.Println("## Control plane")
		fmt.Println()
		rep.Print(os.Stdout)
		fmt.Println()
	}
	if which == "all" || which == "pods" {
		pcfg.Workdir = filepath.Join(dir, "pods")
		if err := os.Mkdir(pcfg.Workdir, 0o700); err != nil {
			return err
		}
		rep, err := podsuite.Run(ctx, pcfg, log)
		if err != nil {
			return err
		}
		fmt.Println("## Pod startup")
		fmt.Println()
		rep.Print(os.Stdout)
		fmt.Println()
	}
	if which == "all" || which == "network" {
		rep, err := netsuite.Run(ctx, ncfg, log)
		if err != nil {
			return err
		}
		fmt.Println("## Service traffic and cluster DNS")
		fmt.Println()
		rep.Print(os.Stdout)
		fmt.Println()
	}
	if which == "all" || which == "deployments" {
		dcfg.Workdir = filepath.Join(dir, "deployments")
		if err := os.Mkdir(dcfg.Workdir, 0o700); err != nil {
			return err
		}
		rep, err := schedsuite.RunDeployments(ctx, dcfg, log)
		if rep != nil && len(rep.Rounds) > 0 {
			fmt.Println("## Deployments")
			fmt.Println()
			rep.Print(os.Stdout)
			fmt.Println()
		}
		if err != nil {
			return err
		}
	}
	if which == "daemonsets" {
		dscfg.Workdir = filepath.Join(dir, "daemonsets")
		if err := os.Mkdir(dscfg.Workdir, 0o700); err != nil {
			return err
		}
		rep, err := schedsuite.RunDaemonSets(ctx, dscfg, log)
		if rep != nil && len(rep.Rounds) > 0 {
			fmt.Println("## DaemonSets")
			fmt.Println()
			rep.Print(os.Stdout)
			fmt.Println()
		}
		if err != nil {
			return err
		}
	}
	if which == "monitoring" {
		rep, err := monsuite.Run(ctx, mcfg, log)
		if err != nil {
			return err
		}
		fmt.Println("## Monitoring stack at rest")
		fmt.Println()
		rep.Print(os.Stdout)
		fmt.Println()
		crep, err := monsuite.RunCadvisor(ctx, ccfg, log)
		if crep != nil && len(crep.Endpoints) > 0 {
			fmt.Println("## The kubelet's usage endpoints")
			fmt.Println()
			crep.Print(os.Stdout)
		}
		if err != nil {
			return err
		}
	}
	if which == "hpa" {
		rep, err := hpasuite.Run(ctx, hcfg, log)
		if rep != nil && len(rep.Rounds) > 0 {
			fmt.Println("## HorizontalPodAutoscaler reaction")
			fmt.Println()
			rep.Print(os.Stdout)
			fmt.Println()
		}
		if err != nil {
			return err
		}
	}
	if which == "serverless" {
		rep, err := fnsuite.Run(ctx, fcfg, log)
		if rep != nil {
			fmt.Println("## Serverless gateway")
			fmt.Println()
			rep.Print(os.Stdout)
			fmt.Println()
		}
		if err != nil {
			return err
		}
	}
	if which == "scheduler" {
		scfg.Workdir = filepath.Join(dir, "scheduler")
		if err := os.Mkdir(scfg.Workdir, 0o700); err != nil {
			return err
		}
		rep, err := schedsuite.Run(ctx, scfg, log)
		if rep != nil && len(rep.Phases) > 0 {
			fmt.Println("## Scheduling")
			fmt.Println()
			rep.Print(os.Stdout)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runAbuse runs the storm and badrequests suites on make up's cluster.
func runAbuse(ctx context.Context, which string, acfg abusesuite.StormConfig, rcfg abusesuite.RequestsConfig, log *slog.Logger) error {
	if which == "storm" {
		rep, err := abusesuite.RunStorm(ctx, acfg, log)
		if rep != nil && len(rep.Phases) > 0 {
			fmt.Println("## A storm of failing pods")
			fmt.Println()
			rep.Print(os.Stdout)
			fmt.Println()
		}
		if err != nil {
			return err
		}
	}
	if which == "badrequests" {
		rep, err := abusesuite.RunRequests(ctx, rcfg, log)
		if rep != nil && len(rep.Modes) > 0 {
			fmt.Println("## Bad requests")
			fmt.Println()
			rep.Print(os.Stdout)
			fmt.Println()
		}
		if err != nil {
			return err
		}
	}
	return nil
}
