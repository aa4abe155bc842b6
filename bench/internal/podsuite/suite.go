package podsuite

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/procstat"
	"minik8s.io/bench/internal/suite"
	mclient "minik8s.io/shared/client"
)

// env is what the tests of a run share.
type env struct {
	cfg        Config
	log        *slog.Logger
	runID      string
	node, ns   string
	proc       *cluster.Process
	kubeletBin string
	kubeletLog string
	api        *mclient.Client
	pods       *mclient.Typed[*corev1.Pod, *corev1.PodList]
	docker     *client.Client
	dockerPids []int

	kubeletBridge, baselineBridge string
	kubeletCIDR, baselineCIDR     string
}

// Run starts an apiserver, measures the baseline, then a kubelet once per
// PLEG period, and removes everything it created, also on failure.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (rep *Report, err error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, log: log, runID: randomID()}
	e.node, e.ns = "podbench-"+e.runID, "podbench-"+e.runID
	// Bridge names have at most 15 characters.
	e.kubeletBridge, e.baselineBridge = "mkk"+e.runID, "mkb"+e.runID
	var seed [2]byte
	_, _ = rand.Read(seed[:])
	cidrs, err := freeCIDRs(int(binary.BigEndian.Uint16(seed[:])))
	if err != nil {
		return nil, err
	}
	e.kubeletCIDR, e.baselineCIDR = cidrs[0], cidrs[1]
	rep = &Report{Machine: suite.DescribeMachine(), Config: cfg, KubeletCIDR: e.kubeletCIDR, BaselineCIDR: e.baselineCIDR, RunID: e.runID}

	if e.docker, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation()); err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	defer e.docker.Close()
	for _, img := range []string{cfg.Pause, cfg.Image} {
		if _, _, err := e.docker.ImageInspectWithRaw(ctx, img); err != nil {
			return nil, fmt.Errorf("image %s (build it with scripts/images.sh --if-missing): %w", img, err)
		}
	}
	e.dockerPids = procstat.FindProcesses("dockerd", "containerd")

	apiBin := cfg.APIServer
	if apiBin == "" {
		log.Info("building apiserver")
		if apiBin, err = cluster.Build(ctx, cfg.Workdir, false); err != nil {
			return nil, err
		}
	}
	if e.kubeletBin = cfg.Kubelet; e.kubeletBin == "" {
		log.Info("building kubelet")
		if e.kubeletBin, err = cluster.BuildKubelet(ctx, cfg.Workdir); err != nil {
			return nil, err
		}
	}
	// The benchmark's cluster has a vhost of its own, so its kubelet queue and make up's never meet.
	vhostURL, dropVHost, err := cluster.VHost(ctx, cfg.AMQPURL, "minik8s-bench-pods-"+e.node)
	if err != nil {
		return nil, err
	}
	defer dropVHost()
	e.cfg.AMQPURL = vhostURL
	e.proc, err = cluster.Start(ctx, cluster.Options{Binary: apiBin, Home: filepath.Join(cfg.Workdir, "home"), AMQPURL: vhostURL, Nodes: []string{e.node}})
	if err != nil {
		return nil, err
	}
	// Cleanup runs on a context of its own: the run's may be what ended.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var errs []error
		errs = append(errs, e.removeContainers(cctx, labelPodNamespace+"="+e.ns))
		if perr := e.proc.Stop(15 * time.Second); perr != nil {
			errs = append(errs, fmt.Errorf("stop apiserver: %w", perr))
		}
		errs = append(errs, e.forgetNode(cctx), deleteLink(cctx, e.kubeletBridge), deleteLink(cctx, e.baselineBridge))
		if cerr := errors.Join(errs...); cerr != nil {
			log.Warn("cleanup", "err", cerr)
			if err == nil {
				err = fmt.Errorf("cleanup: %w", cerr)
			}
		}
	}()
	log.Info("apiserver ready", "pid", e.proc.Pid, "node", e.node, "podCIDR", e.kubeletCIDR, "baselineCIDR", e.baselineCIDR)
	if e.api, err = e.proc.Client(30 * time.Second); err != nil {
		return nil, err
	}
	e.pods = mclient.MustFor[*corev1.Pod, *corev1.PodList](e.api)
	nss := mclient.MustFor[*corev1.Namespace, *corev1.NamespaceList](e.api)
	if _, err := nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	if err := e.proc.PublishRootCA(ctx, e.api, e.ns); err != nil {
		return nil, err
	}
	if err := e.createNode(ctx); err != nil {
		return nil, err
	}

	if err := e.runBaseline(ctx, rep); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	for _, pleg := range cfg.PLEGPeriods {
		if err := e.runKubelet(ctx, rep, pleg); err != nil {
			return nil, fmt.Errorf("kubelet with PLEG period %s: %w", pleg, err)
		}
	}
	return rep, nil
}

func (e *env) testNames() (burst, paced string) {
	return fmt.Sprintf("burst of %d", e.cfg.Burst), fmt.Sprintf("%d at %g/s", e.cfg.Paced, e.cfg.Rate)
}

func (e *env) settle(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(e.cfg.Settle):
	}
}

func (e *env) runBaseline(ctx context.Context, rep *Report) (err error) {
	b, err := newBaseline(e.docker, filepath.Join(e.cfg.Workdir, "baseline-cni"), e.runID, e.baselineBridge, e.baselineCIDR, e.cfg.CNIDir, e.cfg.Pause, e.cfg.Image)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if cerr := b.cleanup(cctx, e); cerr != nil && err == nil {
			err = cerr
		}
	}()
	burst, paced := e.testNames()
	const path = "docker + CNI directly"
	e.log.Info("baseline: burst", "pods", e.cfg.Burst)
	ts, err := b.run(ctx, "burst", e.cfg.Burst, 0)
	if err != nil {
		return err
	}
	rep.add(Result{Test: burst, Path: path, Phases: summarize(ts)})
	if err := b.cleanup(ctx, e); err != nil {
		return err
	}
	e.settle(ctx)
	e.log.Info("baseline: paced", "pods", e.cfg.Paced, "rate", e.cfg.Rate)
	from := e.sampleCPU(0)
	ts, err = b.run(ctx, "paced", e.cfg.Paced, e.cfg.interval())
	if err != nil {
		return err
	}
	rep.add(Result{Test: paced, Path: path, Phases: summarize(ts), CPU: perPod(from, e.sampleCPU(0), e.cfg.Paced), HasCPU: true})
	e.log.Info("baseline done", "paced", rep.Results[len(rep.Results)-1].Phases.Total.String())
	return nil
}

func (e *env) runKubelet(ctx context.Context, rep *Report, pleg time.Duration) (err error) {
	e.log.Info("starting kubelet", "plegPeriod", pleg)
	k, err := e.startKubelet(ctx, pleg)
	if err != nil {
		return err
	}
	e.kubeletLog = k.log
	defer func() {
		// The kubelet tears the pods' networks down; only then may it stop.
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if derr := e.deletePods(cctx); derr != nil && err == nil {
			err = derr
		}
		if serr := k.stop(20 * time.Second); serr != nil && err == nil {
			err = fmt.Errorf("stop kubelet: %w", serr)
		}
	}()
	burst, paced := e.testNames()
	path := fmt.Sprintf("kubelet, PLEG %s", pleg)
	e.settle(ctx)
	e.log.Info("kubelet: burst", "pods", e.cfg.Burst, "plegPeriod", pleg)
	ts, err := e.runPods(ctx, "burst", e.cfg.Burst, 0)
	if err != nil {
		return err
	}
	rep.add(Result{Test: burst, Path: path, PLEG: pleg, Phases: summarize(ts)})
	if err := e.deletePods(ctx); err != nil {
		return err
	}
	e.settle(ctx)
	e.log.Info("kubelet: paced", "pods", e.cfg.Paced, "rate", e.cfg.Rate, "plegPeriod", pleg)
	from := e.sampleCPU(k.pid())
	ts, err = e.runPods(ctx, "paced", e.cfg.Paced, e.cfg.interval())
	if err != nil {
		return err
	}
	rep.add(Result{Test: paced, Path: path, PLEG: pleg, Phases: summarize(ts), CPU: perPod(from, e.sampleCPU(k.pid()), e.cfg.Paced), HasCPU: true})
	e.log.Info("kubelet done", "plegPeriod", pleg, "paced", rep.Results[len(rep.Results)-1].Phases.Total.String())
	return nil
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
