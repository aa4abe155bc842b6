package clusterdns

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik8s.io/kubeproxy/internal/catalog"
)

// TTL of every answer, as CoreDNS's kubernetes plugin: short, since endpoints move.
const TTL = 5

// srv is one SRV record's data.
type srv struct {
	port   uint16
	target string // FQDN, lowercase
	weight uint16
}

// entry holds the records of one name. A name with an entry exists, even with no records
// (an empty non-terminal such as <ns>.svc.<domain>): other types get NODATA, not NXDOMAIN.
type entry struct {
	a     []netip.Addr
	srv   []srv
	cname string
}

// Zone is an immutable snapshot of what the server answers locally. Build one with
// BuildZone; the server swaps the whole snapshot when the caches change.
type Zone struct {
	domain string // FQDN, lowercase, e.g. "cluster.local."
	names  map[string]*entry
	ptr    map[string]string // reverse name -> FQDN
	// hosts are Ingress hosts (FQDN) and wildcards ("*.example.com." matches one label).
	hosts map[string][]netip.Addr
}

// BuildZone makes the snapshot for domain (e.g. "cluster.local") from the Services, their
// EndpointSlices (catalog.Index) and the Ingress hosts (catalog.IngressHosts).
func BuildZone(domain string, services []*corev1.Service, bySvc map[string][]*discoveryv1.EndpointSlice, ingressHosts map[string][]netip.Addr) *Zone {
	z := &Zone{
		domain: dns.CanonicalName(domain),
		names:  map[string]*entry{},
		ptr:    map[string]string{},
		hosts:  make(map[string][]netip.Addr, len(ingressHosts)),
	}
	z.add(z.domain)
	z.add("svc." + z.domain)
	z.add("pod." + z.domain)
	for _, svc := range services {
		z.addService(svc, bySvc[catalog.ServiceKey(svc.Namespace, svc.Name)])
	}
	for h, ips := range ingressHosts {
		z.hosts[dns.CanonicalName(h)] = ips
	}
	return z
}

// add returns the entry of name, creating it and its ancestors inside the zone.
func (z *Zone) add(name string) *entry {
	if e, ok := z.names[name]; ok {
		return e
	}
	e := &entry{}
	z.names[name] = e
	if name != z.domain {
		if _, parent, ok := strings.Cut(name, "."); ok && strings.HasSuffix(parent, z.domain) {
			z.add(parent)
		}
	}
	return e
}

func (z *Zone) addService(svc *corev1.Service, slicesOf []*discoveryv1.EndpointSlice) {
	name := strings.ToLower(svc.Name + "." + svc.Namespace + ".svc." + z.domain)
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		if svc.Spec.ExternalName != "" {
			z.add(name).cname = dns.CanonicalName(svc.Spec.ExternalName)
		}
		return
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		z.addHeadless(name, svc, slicesOf)
		return
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !ip.Is4() {
		return // no address yet
	}
	e := z.add(name)
	e.a = []netip.Addr{ip}
	z.ptr[reverse(ip)] = name
	for _, p := range svc.Spec.Ports {
		if p.Name == "" {
			continue
		}
		z.add(srvName(p.Name, p.Protocol, name)).srv = []srv{{port: uint16(p.Port), target: name, weight: 100}}
	}
}

// addHeadless publishes the ready endpoints: their addresses under the Service's name, each
// under its hostname (or its address with dashes, as CoreDNS does), and per named port an SRV
// record for each endpoint.
func (z *Zone) addHeadless(name string, svc *corev1.Service, slicesOf []*discoveryv1.EndpointSlice) {
	e := z.add(name)
	// Every endpoint of every slice, whatever its ports: a headless Service may have none.
	var all []catalog.Endpoint
	for _, s := range slicesOf {
		all = append(all, catalog.SliceEndpoints(s, 0)...)
	}
	slices.SortStableFunc(all, func(a, b catalog.Endpoint) int { return a.IP.Compare(b.IP) })
	seen := map[netip.Addr]bool{}
	for _, ep := range all {
		if !ep.Ready || seen[ep.IP] {
			continue
		}
		seen[ep.IP] = true
		e.a = append(e.a, ep.IP)
		host := endpointHost(ep)
		z.add(host + "." + name).a = []netip.Addr{ep.IP}
		if ep.Hostname != "" {
			z.ptr[reverse(ep.IP)] = host + "." + name
		}
	}
	slices.SortFunc(e.a, func(a, b netip.Addr) int { return a.Compare(b) })
	for _, p := range svc.Spec.Ports {
		if p.Name == "" {
			continue
		}
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		var records []srv
		for _, ep := range catalog.PortEndpoints(slicesOf, p.Name, proto) {
			if !ep.Ready {
				continue
			}
			records = append(records, srv{port: uint16(ep.Port), target: endpointHost(ep) + "." + name})
		}
		for i := range records {
			records[i].weight = uint16(100 / len(records))
		}
		if len(records) > 0 {
			z.add(srvName(p.Name, proto, name)).srv = records
		}
	}
}

func endpointHost(ep catalog.Endpoint) string {
	if ep.Hostname != "" {
		return strings.ToLower(ep.Hostname)
	}
	return strings.ReplaceAll(ep.IP.String(), ".", "-")
}

func srvName(port string, proto corev1.Protocol, svcName string) string {
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return "_" + strings.ToLower(port) + "._" + strings.ToLower(string(proto)) + "." + svcName
}

func reverse(ip netip.Addr) string {
	b := ip.As4()
	return strconv.Itoa(int(b[3])) + "." + strconv.Itoa(int(b[2])) + "." + strconv.Itoa(int(b[1])) + "." + strconv.Itoa(int(b[0])) + ".in-addr.arpa."
}
