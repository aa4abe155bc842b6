package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/kubeproxy/internal/catalog"
	"minik8s.io/kubeproxy/internal/clusterdns"
	"minik8s.io/kubeproxy/internal/hostsfile"
	"minik8s.io/kubeproxy/internal/proxier"
	"minik8s.io/shared/informer"
)

// zoneSetter is what the loop needs of the DNS server.
type zoneSetter interface{ SetZone(*clusterdns.Zone) }

// loop turns the caches into the ruleset, the DNS zone and the hosts file. Any change to a
// cache wakes it; it syncs at once when idle, at most once per minSync under a burst, every
// period anyway (checking that the kernel still holds our chains and that our jumps still
// come first in the built-in chains), and after a failure again with backoff.
type loop struct {
	services, slices, ingresses *informer.Informer
	proxier                     *proxier.Proxier
	dns                         zoneSetter
	domain                      string
	hostsFile                   string
	minSync, period             time.Duration
	log                         *slog.Logger

	wake chan struct{}
}

func newLoop(l loop) *loop {
	l.wake = make(chan struct{}, 1)
	h := informer.HandlerFuncs{
		AddFunc:    func(runtime.Object) { l.poke() },
		UpdateFunc: func(runtime.Object, runtime.Object) { l.poke() },
		DeleteFunc: func(runtime.Object) { l.poke() },
	}
	p := &l
	for _, inf := range []*informer.Informer{l.services, l.slices, l.ingresses} {
		inf.AddEventHandler(h)
	}
	return p
}

func (l *loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Start syncs until ctx ends. Nothing is synced before every cache has its first list: an
// empty cache would delete every Service's rules.
func (l *loop) Start(ctx context.Context) error {
	if !informer.WaitForSync(ctx, l.services.HasSynced, l.slices.HasSynced, l.ingresses.HasSynced) {
		return nil
	}
	l.log.Info("caches synced")
	tick := time.NewTicker(l.period)
	defer tick.Stop()
	var retry <-chan time.Time
	failures := 0
	var last time.Time
	check := false
	for {
		if wait := l.minSync - time.Since(last); wait > 0 && !last.IsZero() {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		last = time.Now()
		if err := l.syncOnce(ctx, check); err != nil {
			failures++
			backoff := min(time.Second<<min(failures-1, 5), 30*time.Second)
			backoff += time.Duration(rand.Int64N(int64(backoff) / 4))
			l.log.Error("sync failed; retrying", "err", err, "in", backoff.Round(time.Millisecond))
			retry = time.After(backoff)
		} else {
			failures, retry = 0, nil
		}
		check = false
		select {
		case <-ctx.Done():
			return nil
		case <-l.wake:
		case <-tick.C:
			check = true
		case <-retry:
		}
	}
}

// syncOnce builds everything from the caches and applies it; each part is applied even when
// another fails.
func (l *loop) syncOnce(ctx context.Context, check bool) error {
	services := typed[*corev1.Service](l.services)
	slices := typed[*discoveryv1.EndpointSlice](l.slices)
	ingresses := typed[*networkingv1.Ingress](l.ingresses)
	bySvc := catalog.Index(slices)
	hosts := catalog.IngressHosts(ingresses)

	l.dns.SetZone(clusterdns.BuildZone(l.domain, services, bySvc, hosts))

	var errs []error
	if check {
		if ok, err := l.proxier.Check(ctx); err != nil {
			errs = append(errs, fmt.Errorf("check chains: %w", err))
		} else if !ok {
			l.log.Warn("kubeproxy's chains are gone from the kernel (a firewall reload?); writing them again")
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	res, err := l.proxier.Sync(sctx, catalog.ServicePorts(services, bySvc))
	cancel()
	if err != nil {
		errs = append(errs, fmt.Errorf("iptables: %w", err))
	} else if res.PayloadBytes > 0 || res.Full {
		l.log.Info("rules synced", "services", len(services), "rules", res.Rules, "payloadBytes", res.PayloadBytes, "full", res.Full, "jumpChainsFixed", res.JumpChainsFixed)
	}
	if l.hostsFile != "" {
		if wrote, err := hostsfile.Update(l.hostsFile, hosts); err != nil {
			errs = append(errs, fmt.Errorf("hosts file: %w", err))
		} else if wrote {
			l.log.Info("hosts file updated", "path", l.hostsFile, "hosts", len(hosts))
		}
	}
	return errors.Join(errs...)
}

func typed[T runtime.Object](inf *informer.Informer) []T {
	objs := inf.Store().List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}
