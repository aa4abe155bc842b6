package netsuite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/bench/internal/suite"
)

// Target names in the probes' results.
const (
	targetPod       = "pod IP"
	targetClusterIP = "ClusterIP"
	dnsService      = "service"
	dnsForwarded    = "forwarded"
	dnsUpstream     = "upstream"
)

// Run measures on make up's cluster: it creates a namespace with a fileserver pod, its
// Service and a client pod, measures from the host and from the client pod, and deletes the
// namespace at the end, also on failure.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (rep *Report, err error) {
	cfg.fill()
	outside, err := outsideName(cfg.AptSources)
	if err != nil {
		return nil, fmt.Errorf("outside name for the DNS test: %w", err)
	}
	f, err := os.Open(cfg.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("upstream resolver: %w", err)
	}
	upstream, err := upstreamResolver(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("upstream resolver: %s: %w", cfg.ResolvConf, err)
	}

	e := &env{cfg: cfg, log: log, ns: "netbench-" + randomID()}
	if err := e.connect(ctx); err != nil {
		return nil, err
	}
	defer e.docker.Close()
	rep = &Report{Machine: suite.DescribeMachine(), Config: cfg, Node: e.node, Namespace: e.ns, OutsideName: outside, Upstream: upstream,
		ServiceName: fmt.Sprintf("%s.%s.svc.%s", serviceName, e.ns, cfg.ClusterDomain)}

	log.Info("creating the fileserver, its Service and a client pod", "namespace", e.ns, "node", e.node)
	// Cleanup runs on a context of its own: the run's may be what ended.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if derr := e.deleteNamespace(cctx); derr != nil {
			log.Warn("cleanup", "err", derr)
			if err == nil {
				err = derr
			}
		}
	}()
	if err := e.create(ctx); err != nil {
		return nil, err
	}
	podIP, err := e.waitRunning(ctx, fileserverPod)
	if err != nil {
		return nil, err
	}
	if _, err := e.waitRunning(ctx, clientPod); err != nil {
		return nil, err
	}
	svc, err := e.svcs.Get(ctx, e.ns, serviceName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", e.ns, serviceName, err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == "None" {
		return nil, fmt.Errorf("service %s/%s has no ClusterIP", e.ns, serviceName)
	}
	rep.PodAddr, rep.ClusterAddr = hostPort(podIP, fileserverPort), hostPort(svc.Spec.ClusterIP, servicePort)
	// Running and ready without a probe means its process started, not yet that it listens.
	if err := e.waitListening(ctx, rep.PodAddr); err != nil {
		return nil, err
	}
	if err := e.putFiles(ctx, rep.PodAddr); err != nil {
		return nil, err
	}
	log.Info("waiting for the ClusterIP and the cluster DNS", "clusterIP", rep.ClusterAddr)
	if err := e.waitServing(ctx, rep.ClusterAddr); err != nil {
		return nil, err
	}
	clusterDNS := net.JoinHostPort(cfg.ClusterDNS, "53")
	dnsTargets := []dnsTarget{
		{Name: dnsService, Server: clusterDNS, Question: rep.ServiceName, Want: svc.Spec.ClusterIP},
		{Name: dnsForwarded, Server: clusterDNS, Question: outside},
		{Name: dnsUpstream, Server: upstream, Question: outside},
	}
	if err := e.waitDNS(ctx, dnsTargets[0]); err != nil {
		return nil, err
	}
	pid, err := e.sandboxPID(ctx, clientPod)
	if err != nil {
		return nil, err
	}

	sp := spec{
		HTTP:       []httpTarget{{Name: targetPod, Addr: rep.PodAddr}, {Name: targetClusterIP, Addr: rep.ClusterAddr}},
		SmallPath:  smallPath,
		SmallBytes: cfg.SmallBytes,
		LargePath:  largePath,
		LargeBytes: cfg.LargeBytes,
		Samples:    cfg.Samples,
		Warmup:     cfg.Warmup,
		Transfers:  cfg.Transfers,
		OpTimeout:  cfg.OpTimeout,
		DNSTimeout: cfg.DNSTimeout,
	}
	log.Info("measuring from the host", "samples", cfg.Samples, "transfers", cfg.Transfers)
	host, err := runProbe(ctx, nil, sp)
	if err != nil {
		return nil, fmt.Errorf("probe on the host: %w", err)
	}
	sp.DNS = dnsTargets
	log.Info("measuring from the client pod", "pid", pid, "samples", cfg.Samples, "transfers", cfg.Transfers)
	inPod, err := runProbe(ctx, []string{"nsenter", "--net=/proc/" + strconv.Itoa(pid) + "/ns/net"}, sp)
	if err != nil {
		return nil, fmt.Errorf("probe in pod %s/%s: %w", e.ns, clientPod, err)
	}
	for _, v := range []struct {
		from string
		res  *result
	}{{"host", host}, {"client pod", inPod}} {
		rep.Latency = append(rep.Latency, Pair{From: v.from,
			PodIP: stats.Summarize(v.res.Latency[targetPod]), ClusterIP: stats.Summarize(v.res.Latency[targetClusterIP])})
		rep.Transfer = append(rep.Transfer, Pair{From: v.from,
			PodIP: stats.Summarize(v.res.Transfer[targetPod]), ClusterIP: stats.Summarize(v.res.Transfer[targetClusterIP])})
	}
	var errs []error
	for _, d := range []struct {
		name, query, server string
	}{
		{dnsService, "Service name", "cluster DNS " + cfg.ClusterDNS},
		{dnsForwarded, "outside name (forwarded)", "cluster DNS " + cfg.ClusterDNS},
		{dnsUpstream, "outside name", "upstream " + upstream},
	} {
		r := DNSResult{Query: d.query, Server: d.server, Summary: stats.Summarize(inPod.DNS[d.name]), Errors: inPod.DNSErrors[d.name], Baseline: d.name == dnsUpstream}
		rep.DNS = append(rep.DNS, r)
		if r.Errors > 0 {
			log.Warn("DNS queries failed", "query", d.query, "errors", r.Errors, "first", inPod.DNSFirstError[d.name])
		}
		if r.Summary.N == 0 {
			errs = append(errs, fmt.Errorf("DNS %s at %s: every query failed: %s", d.query, d.server, inPod.DNSFirstError[d.name]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rep, nil
}
