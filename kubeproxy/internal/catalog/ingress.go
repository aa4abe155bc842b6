package catalog

import (
	"net/netip"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
)

// IngressHosts maps every host named by an Ingress's rules (lowercase; wildcards such as
// *.example.com included) to the addresses in the Ingress's status.loadBalancer.ingress[].ip:
// the ClusterIP of the nginx Service that serves it, which the Ingress controller writes.
// An Ingress without an address yet contributes nothing. Addresses are sorted and unique, so
// a host two Ingresses share maps to both.
func IngressHosts(ingresses []*networkingv1.Ingress) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, ing := range ingresses {
		var ips []netip.Addr
		for _, lb := range ing.Status.LoadBalancer.Ingress {
			if ip, err := netip.ParseAddr(lb.IP); err == nil && ip.Is4() {
				ips = append(ips, ip)
			}
		}
		if len(ips) == 0 {
			continue
		}
		for _, r := range ing.Spec.Rules {
			host := strings.TrimSuffix(strings.ToLower(r.Host), ".")
			if host == "" {
				continue
			}
			out[host] = append(out[host], ips...)
		}
	}
	for h, ips := range out {
		slices.SortFunc(ips, func(a, b netip.Addr) int { return a.Compare(b) })
		out[h] = slices.Compact(ips)
	}
	return out
}
