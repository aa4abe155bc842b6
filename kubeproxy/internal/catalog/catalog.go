package catalog

import (
	"cmp"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Endpoint is one address of a service port.
type Endpoint struct {
	IP   netip.Addr
	Port int32
	// Hostname is the endpoint's DNS label under a headless Service (spec.hostname of its pod);
	// empty when it has none.
	Hostname string
	NodeName string
	// Conditions as EndpointSlices define them: an unset ready counts as ready, an unset
	// serving follows ready, an unset terminating is false.
	Ready, Serving, Terminating bool
}

// ServicePort is one port of a Service that gets rules: it has a cluster IP.
type ServicePort struct {
	Namespace, Name string
	// PortName is the port's name in the Service; empty for a single unnamed port.
	PortName string
	Protocol corev1.Protocol
	// ClusterIP and Port are what clients dial; NodePort is 0 when the Service has none.
	ClusterIP netip.Addr
	Port      int32
	NodePort  int32
	// AffinitySeconds is the ClientIP session affinity's timeout; 0 means no affinity.
	AffinitySeconds int32
	// Endpoints are where connections go: the ready endpoints, or when none is ready the ones
	// still serving while they terminate (as kube-proxy does, so a rolling restart of the last
	// pod does not refuse connections). Sorted by address and port, without duplicates.
	Endpoints []Endpoint
}

// String names the port as kube-proxy does, "namespace/name:port" ("namespace/name" for an
// unnamed port); it is hashed into chain names and written into rule comments.
func (p ServicePort) String() string {
	s := p.Namespace + "/" + p.Name
	if p.PortName != "" {
		s += ":" + p.PortName
	}
	return s
}

// ServiceKey names a Service, "namespace/name".
func ServiceKey(namespace, name string) string { return namespace + "/" + name }

// Index groups EndpointSlices by the Service they belong to (label kubernetes.io/service-name).
// Slices without the label, or of another address type than IPv4, are left out.
func Index(slices []*discoveryv1.EndpointSlice) map[string][]*discoveryv1.EndpointSlice {
	out := make(map[string][]*discoveryv1.EndpointSlice)
	for _, s := range slices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		k := ServiceKey(s.Namespace, svc)
		out[k] = append(out[k], s)
	}
	return out
}

// ServicePorts returns the ports of every Service that has a cluster IP, sorted by namespace,
// name, port name and protocol. Headless and ExternalName Services have no rules and are left
// out, and so are protocols other than TCP and UDP. bySvc is Index of the EndpointSlices.
func ServicePorts(services []*corev1.Service, bySvc map[string][]*discoveryv1.EndpointSlice) []ServicePort {
	var out []ServicePort
	for _, svc := range services {
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !ip.Is4() {
			continue // headless ("None"), not yet allocated, or not IPv4
		}
		var affinity int32
		if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
			affinity = corev1.DefaultClientIPServiceAffinitySeconds
			if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
				affinity = *c.ClientIP.TimeoutSeconds
			}
		}
		slicesOf := bySvc[ServiceKey(svc.Namespace, svc.Name)]
		for _, sp := range svc.Spec.Ports {
			proto := sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			if proto != corev1.ProtocolTCP && proto != corev1.ProtocolUDP {
				continue
			}
			p := ServicePort{
				Namespace: svc.Namespace, Name: svc.Name, PortName: sp.Name, Protocol: proto,
				ClusterIP: ip, Port: sp.Port, AffinitySeconds: affinity,
				Endpoints: Usable(PortEndpoints(slicesOf, sp.Name, proto)),
			}
			if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
				p.NodePort = sp.NodePort
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b ServicePort) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.PortName, b.PortName), cmp.Compare(a.Protocol, b.Protocol))
	})
	return out
}

// PortEndpoints returns every endpoint of the slices for the service port named portName with
// protocol proto, at the port number its slice gives: that is how a named targetPort resolves
// to a different number per pod (the EndpointSlice controller puts pods with different numbers
// in different slices). Sorted by address and port, one entry per address and port (a pod can
// briefly be in two slices while they are rebalanced; the first in slice name order wins).
func PortEndpoints(slicesOf []*discoveryv1.EndpointSlice, portName string, proto corev1.Protocol) []Endpoint {
	ordered := slices.Clone(slicesOf)
	slices.SortFunc(ordered, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	var out []Endpoint
	for _, s := range ordered {
		port, ok := slicePort(s, portName, proto)
		if !ok {
			continue
		}
		out = append(out, SliceEndpoints(s, port)...)
	}
	slices.SortStableFunc(out, compareEndpoints)
	return slices.CompactFunc(out, func(a, b Endpoint) bool { return a.IP == b.IP && a.Port == b.Port })
}

// SliceEndpoints returns the IPv4 endpoints of one slice at port, with their conditions, in
// the slice's order.
func SliceEndpoints(s *discoveryv1.EndpointSlice, port int32) []Endpoint {
	out := make([]Endpoint, 0, len(s.Endpoints))
	for _, ep := range s.Endpoints {
		// Kubernetes uses the first address of an endpoint; the others are unused.
		if len(ep.Addresses) == 0 {
			continue
		}
		ip, err := netip.ParseAddr(ep.Addresses[0])
		if err != nil || !ip.Is4() {
			continue
		}
		e := Endpoint{IP: ip, Port: port}
		e.Ready = ep.Conditions.Ready == nil || *ep.Conditions.Ready
		e.Serving = e.Ready
		if ep.Conditions.Serving != nil {
			e.Serving = *ep.Conditions.Serving
		}
		e.Terminating = ep.Conditions.Terminating != nil && *ep.Conditions.Terminating
		if ep.Hostname != nil {
			e.Hostname = *ep.Hostname
		}
		if ep.NodeName != nil {
			e.NodeName = *ep.NodeName
		}
		out = append(out, e)
	}
	return out
}

func compareEndpoints(a, b Endpoint) int {
	return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Port, b.Port))
}

// slicePort finds the port of a slice that serves the service port portName/proto.
func slicePort(s *discoveryv1.EndpointSlice, portName string, proto corev1.Protocol) (int32, bool) {
	for _, p := range s.Ports {
		name, pr := "", corev1.ProtocolTCP
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			pr = *p.Protocol
		}
		if name == portName && pr == proto && p.Port != nil && *p.Port > 0 {
			return *p.Port, true
		}
	}
	return 0, false
}

// Usable picks where new connections go, as kube-proxy does: the ready endpoints; when none is
// ready, the ones that still serve while terminating.
func Usable(eps []Endpoint) []Endpoint {
	var ready, terminating []Endpoint
	for _, e := range eps {
		switch {
		case e.Ready:
			ready = append(ready, e)
		case e.Serving && e.Terminating:
			terminating = append(terminating, e)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return terminating
}
