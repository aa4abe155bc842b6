package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"minik8s.io/kubeproxy/internal/clusterdns"
	"minik8s.io/kubeproxy/internal/localaddr"
	"minik8s.io/kubeproxy/internal/netfilter/iptables"
	"minik8s.io/kubeproxy/internal/proxier"
	"minik8s.io/shared/manager"
)

// Run runs kubeproxy until ctx ends. It never flushes its rules on the way out: Services keep
// working while it is stopped, and the next start reconciles from what the kernel holds.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	s, err := cfg.Validate()
	if err != nil {
		return err
	}
	tables := cfg.Tables
	if tables == nil {
		if tables, err = iptables.New(iptables.Config{}); err != nil {
			return err
		}
	}
	upstreams, err := clusterdns.Upstreams(cfg.UpstreamResolvConf, s.dnsAddr)
	if err != nil {
		return err
	}
	if len(upstreams) == 0 {
		log.Warn("no upstream DNS servers: names outside the cluster will fail", "resolvConf", cfg.UpstreamResolvConf)
	}
	m, err := manager.New(manager.Options{Name: "kubeproxy", Host: cfg.Node, Kubeconfig: cfg.Kubeconfig,
		UserAgent: "minik8s-kubeproxy/" + cfg.Node, AMQPURL: cfg.AMQPURL, Queue: cfg.Queue, BusName: "kubeproxy." + cfg.Node,
		RelistPeriod: cfg.RelistPeriod, MetricsAddress: cfg.MetricsAddress, ShutdownTimeout: cfg.ShutdownTimeout, Logger: log})
	if err != nil {
		return err
	}
	dnsServer := clusterdns.NewServer(clusterdns.Config{
		Address: net.JoinHostPort(s.dnsAddr.String(), strconv.Itoa(cfg.DNSPort)), Domain: cfg.ClusterDomain,
		Upstreams: upstreams, Logger: log.With("part", "dns"), Metrics: clusterdns.NewMetrics(m.Metrics()),
	})
	infs := m.Informers()
	l := newLoop(loop{
		services: infs.Services(), slices: infs.EndpointSlices(nil), ingresses: infs.Ingresses(),
		proxier: proxier.New(proxier.Config{Tables: tables, Options: s.rules, Logger: log.With("part", "proxier"), Metrics: proxier.NewMetrics(m.Metrics())}),
		dns:     dnsServer, domain: cfg.ClusterDomain, hostsFile: cfg.HostsFile,
		minSync: cfg.MinSyncPeriod, period: cfg.SyncPeriod, log: log,
	})
	link, err := localaddr.Ensure(s.dnsAddr, localaddr.DefaultLink)
	if err != nil {
		return fmt.Errorf("dns address %s: %w", s.dnsAddr, err)
	}
	log.Info("starting", "queue", cfg.Queue, "clusterCIDR", s.rules.ClusterCIDR, "serviceCIDR", s.serviceNet,
		"nodeIP", s.nodeIP, "balance", s.rules.Balance, "dnsAddress", s.dnsAddr, "dnsLink", link, "hostsFile", cfg.HostsFile)
	m.Add("sync", l)
	m.Add("dns", dnsServer)
	return m.Start(ctx)
}
