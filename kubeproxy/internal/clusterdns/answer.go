package clusterdns

import (
	"net"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// Answer answers req from the zone. It returns nil and true when the question is not the
// zone's to answer (a name outside the cluster domain that is no Ingress host, a reverse name
// it does not know): the server forwards it upstream. Names in the cluster domain are answered
// with authority: a name with no records of the type asked is NODATA (NOERROR, SOA in the
// authority section), a name that does not exist NXDOMAIN.
func (z *Zone) Answer(req *dns.Msg) (*dns.Msg, bool) {
	if len(req.Question) != 1 {
		return new(dns.Msg).SetRcode(req, dns.RcodeFormatError), false
	}
	q := req.Question[0]
	name := strings.ToLower(dns.Fqdn(q.Name))
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		return nil, true
	}
	resp := new(dns.Msg).SetReply(req)
	resp.RecursionAvailable = true

	if ips, ok := z.ingressHost(name); ok {
		if q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY {
			for _, ip := range ips {
				resp.Answer = append(resp.Answer, aRecord(q.Name, ip))
			}
		}
		return resp, false
	}
	if q.Qtype == dns.TypePTR {
		if target, ok := z.ptr[name]; ok {
			resp.Authoritative = true
			resp.Answer = append(resp.Answer, &dns.PTR{Hdr: header(q.Name, dns.TypePTR), Ptr: target})
			return resp, false
		}
	}
	if !dns.IsSubDomain(z.domain, name) {
		return nil, true
	}

	resp.Authoritative = true
	e, ok := z.names[name]
	if !ok {
		if ip, isPod := z.podAddress(name); isPod {
			e = &entry{a: []netip.Addr{ip}}
		}
	}
	if e == nil {
		resp.Rcode = dns.RcodeNameError
		resp.Ns = append(resp.Ns, z.soa())
		return resp, false
	}
	if e.cname != "" {
		resp.Answer = append(resp.Answer, &dns.CNAME{Hdr: header(q.Name, dns.TypeCNAME), Target: e.cname})
		return resp, false
	}
	if q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY {
		for _, ip := range e.a {
			resp.Answer = append(resp.Answer, aRecord(q.Name, ip))
		}
	}
	if q.Qtype == dns.TypeSRV || q.Qtype == dns.TypeANY {
		for _, s := range e.srv {
			resp.Answer = append(resp.Answer, &dns.SRV{Hdr: header(q.Name, dns.TypeSRV), Priority: 0, Weight: s.weight, Port: s.port, Target: s.target})
			if t := z.names[s.target]; t != nil {
				for _, ip := range t.a {
					resp.Extra = append(resp.Extra, aRecord(s.target, ip))
				}
			}
		}
	}
	if q.Qtype == dns.TypeSOA && name == z.domain {
		resp.Answer = append(resp.Answer, z.soa())
	}
	if len(resp.Answer) == 0 {
		resp.Ns = append(resp.Ns, z.soa())
	}
	return resp, false
}

// ingressHost finds an Ingress host: the name itself, or a wildcard one label up.
func (z *Zone) ingressHost(name string) ([]netip.Addr, bool) {
	if ips, ok := z.hosts[name]; ok {
		return ips, true
	}
	if _, parent, ok := strings.Cut(name, "."); ok && parent != "" {
		ips, ok := z.hosts["*."+parent]
		return ips, ok
	}
	return nil, false
}

// podAddress reads <a-b-c-d>.<namespace>.pod.<domain>, as CoreDNS's "pods insecure" does.
func (z *Zone) podAddress(name string) (netip.Addr, bool) {
	rest, ok := strings.CutSuffix(name, ".pod."+z.domain)
	if !ok {
		return netip.Addr{}, false
	}
	dashed, ns, ok := strings.Cut(rest, ".")
	if !ok || ns == "" || strings.Contains(ns, ".") {
		return netip.Addr{}, false
	}
	ip, err := netip.ParseAddr(strings.ReplaceAll(dashed, "-", "."))
	if err != nil || !ip.Is4() {
		return netip.Addr{}, false
	}
	return ip, true
}

func (z *Zone) soa() dns.RR {
	return &dns.SOA{
		Hdr: header(z.domain, dns.TypeSOA), Ns: "ns.dns." + z.domain, Mbox: "hostmaster." + z.domain,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL,
	}
}

func header(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
}

func aRecord(name string, ip netip.Addr) dns.RR {
	return &dns.A{Hdr: header(name, dns.TypeA), A: net.IP(ip.AsSlice())}
}
