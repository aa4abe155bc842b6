package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"minik8s.io/kubeproxy/internal/clusterdns"
	"minik8s.io/kubeproxy/internal/localaddr"
	"minik8s.io/kubeproxy/internal/netfilter/iptables"
	"minik8s.io/kubeproxy/internal/proxier"
	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/metrics"
	"minik8s.io/shared/run"
)

// firstListWait lets the caches' first lists wait for the bus's connect relist (see
// informer.Config.FirstListWait); without a broker, kubeproxy starts from the API alone.
const firstListWait = 5 * time.Second

// Run runs kubeproxy until ctx ends. It never flushes its rules on the way out: Services keep
// working while it is stopped, and the next start reconciles from what the kernel holds.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	s, err := cfg.Validate()
	if err != nil {
		return err
	}
	ccfg, err := client.FromKubeconfig(cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	ccfg.UserAgent = "minik8s-kubeproxy/" + cfg.Node
	cl, err := client.New(ccfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	tables := cfg.Tables
	if tables == nil {
		t, err := iptables.New(iptables.Config{})
		if err != nil {
			return err
		}
		tables = t
	}
	upstreams, err := clusterdns.Upstreams(cfg.UpstreamResolvConf, s.dnsAddr)
	if err != nil {
		return err
	}
	if len(upstreams) == 0 {
		log.Warn("no upstream DNS servers: names outside the cluster will fail", "resolvConf", cfg.UpstreamResolvConf)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	newInformer := func(name string, lw informer.ListerWatcher) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: lw, NoWatch: true,
			RelistPeriod: cfg.RelistPeriod, FirstListWait: firstListWait, Logger: log})
	}
	services := newInformer("services", informer.ForNamespace(client.MustFor[*corev1.Service, *corev1.ServiceList](cl), ""))
	slices := newInformer("endpointslices", informer.ForNamespace(client.MustFor[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](cl), ""))
	ingresses := newInformer("ingresses", informer.ForNamespace(client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](cl), ""))

	dnsServer := clusterdns.NewServer(clusterdns.Config{
		Address: net.JoinHostPort(s.dnsAddr.String(), strconv.Itoa(cfg.DNSPort)), Domain: cfg.ClusterDomain,
		Upstreams: upstreams, Logger: log.With("part", "dns"), Metrics: clusterdns.NewMetrics(reg),
	})
	l := newLoop(loop{
		services: services, slices: slices, ingresses: ingresses,
		proxier: proxier.New(proxier.Config{Tables: tables, Options: s.rules, Logger: log.With("part", "proxier"), Metrics: proxier.NewMetrics(reg)}),
		dns:     dnsServer, domain: cfg.ClusterDomain, hostsFile: cfg.HostsFile,
		minSync: cfg.MinSyncPeriod, period: cfg.SyncPeriod, log: log,
	})

	bindings, ok := bus.Bindings(cfg.Queue)
	if !ok {
		return fmt.Errorf("no bus bindings for queue %q", cfg.Queue)
	}
	b := amqpbus.New(amqpbus.Config{URL: cfg.AMQPURL, Name: "kubeproxy." + cfg.Node, Logger: log.With("part", "bus")})
	defer b.Close()
	byResource := map[string]*informer.Informer{"services": services, "endpointslices": slices, "ingresses": ingresses}
	handle := func(_ context.Context, d bus.Delivery) error {
		inf := byResource[d.Headers[bus.HeaderResource]]
		if inf == nil {
			return nil // endpoints.*: the queue carries them, kubeproxy reads EndpointSlices
		}
		var err error
		switch d.Headers[bus.HeaderResource] {
		case "services":
			_, err = inf.ApplyEvent(d.Body, &corev1.Service{})
		case "endpointslices":
			_, err = inf.ApplyEvent(d.Body, &discoveryv1.EndpointSlice{})
		case "ingresses":
			_, err = inf.ApplyEvent(d.Body, &networkingv1.Ingress{})
		}
		if err != nil {
			// The relist repairs what a bad message meant; retrying it would not.
			log.Warn("dropping bus event", "id", d.ID, "err", err)
		}
		return nil
	}

	link, err := localaddr.Ensure(s.dnsAddr, localaddr.DefaultLink)
	if err != nil {
		return fmt.Errorf("dns address %s: %w", s.dnsAddr, err)
	}
	log.Info("starting", "queue", cfg.Queue, "clusterCIDR", s.rules.ClusterCIDR, "serviceCIDR", s.serviceNet,
		"nodeIP", s.nodeIP, "balance", s.rules.Balance, "dnsAddress", s.dnsAddr, "dnsLink", link, "hostsFile", cfg.HostsFile)

	g := &run.Group{ShutdownTimeout: cfg.ShutdownTimeout, Logger: log}
	g.Add("services-informer", services)
	g.Add("endpointslices-informer", slices)
	g.Add("ingresses-informer", ingresses)
	// No acks: the handler only updates caches and never fails; OnConnect relists, which
	// repairs whatever a lost connection took with it.
	g.Add("bus", run.Func(func(ctx context.Context) error {
		return b.Consume(ctx, bus.Subscription{Queue: cfg.Queue, Bindings: bindings, Handler: handle, NoAck: true,
			OnConnect: func(context.Context) error {
				for _, inf := range byResource {
					inf.RequestRelist()
				}
				return nil
			}})
	}))
	g.Add("sync", l)
	g.Add("dns", dnsServer)
	if cfg.MetricsAddress != "" {
		g.Add("metrics", run.Func(func(ctx context.Context) error { return metrics.Serve(ctx, cfg.MetricsAddress, reg, log) }))
	}
	return g.Run(ctx)
}
