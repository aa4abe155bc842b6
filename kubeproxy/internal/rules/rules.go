package rules

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"

	"minik8s.io/kubeproxy/internal/catalog"
)

// Tables kubeproxy writes, in the order of the payload.
const (
	TableNAT    = "nat"
	TableFilter = "filter"
)

// Chains. Every chain kubeproxy owns starts with Prefix, and only those are ever flushed or
// deleted. The service and endpoint chains end in a hash (see ServiceChain, EndpointChain).
const (
	Prefix = "MINIK8S-"

	ChainServices         = "MINIK8S-SERVICES"          // nat: ClusterIPs, then the NodePorts jump; filter: ClusterIPs without endpoints
	ChainNodePorts        = "MINIK8S-NODEPORTS"         // nat: NodePorts on local addresses
	ChainPostrouting      = "MINIK8S-POSTROUTING"       // nat: masquerades what MINIK8S-MARK-MASQ marked
	ChainMarkMasq         = "MINIK8S-MARK-MASQ"         // nat: marks a connection for masquerade
	ChainExternalServices = "MINIK8S-EXTERNAL-SERVICES" // filter: NodePorts without endpoints
	ChainForward          = "MINIK8S-FORWARD"           // filter: lets marked and established service traffic through FORWARD

	servicePrefix  = "MINIK8S-SVC-"
	endpointPrefix = "MINIK8S-SEP-"
)

// MasqueradeMark is the packet mark bit (the one kube-proxy uses) that asks
// MINIK8S-POSTROUTING to masquerade a connection.
const MasqueradeMark = "0x4000"

// Balance is how a service chain spreads new connections over its endpoints.
type Balance string

const (
	// Random picks each endpoint with equal probability (-m statistic --mode random), as
	// kube-proxy does.
	Random Balance = "random"
	// RoundRobin hands connections to the endpoints in turn (-m statistic --mode nth). The nat
	// table only sees a connection's first packet, so the counters count connections.
	RoundRobin Balance = "roundrobin"
)

// ParseBalance reads a --balance value.
func ParseBalance(s string) (Balance, error) {
	switch Balance(s) {
	case Random, RoundRobin:
		return Balance(s), nil
	}
	return "", fmt.Errorf("balance %q: want %s or %s", s, Random, RoundRobin)
}

// Options are the node's settings that shape the rules.
type Options struct {
	// ClusterCIDR holds every pod address. Connections to a ClusterIP from outside it (the
	// node itself, other hosts) are masqueraded so that replies come back through this node.
	ClusterCIDR netip.Prefix
	// NodePortAddresses restricts NodePorts to destinations in these prefixes; empty means
	// every local address but loopback (kube-proxy's default, without route_localnet).
	NodePortAddresses []netip.Prefix
	Balance           Balance
}

// Chain is one chain and its rules, each a whole "-A <chain> ..." line.
type Chain struct {
	Name  string
	Rules []string
}

// Table is the chains kubeproxy owns in one table, in payload order.
type Table struct {
	Name   string
	Chains []Chain
}

// Ruleset is everything kubeproxy programs: the nat table, then the filter table.
type Ruleset struct {
	Tables []Table
}

// ChainNames returns the names of the chains in table, in payload order.
func (r *Ruleset) ChainNames(table string) []string {
	for _, t := range r.Tables {
		if t.Name == table {
			names := make([]string, len(t.Chains))
			for i, c := range t.Chains {
				names[i] = c.Name
			}
			return names
		}
	}
	return nil
}

// Rules counts the rules of the ruleset.
func (r *Ruleset) Rules() int {
	n := 0
	for _, t := range r.Tables {
		for _, c := range t.Chains {
			n += len(c.Rules)
		}
	}
	return n
}

// ServiceChain names the chain of a service port: a hash of its name and protocol, as
// kube-proxy names KUBE-SVC-... chains, so the name is stable across restarts and nodes.
func ServiceChain(p catalog.ServicePort) string {
	return servicePrefix + hash(p.String()+string(p.Protocol))
}

// EndpointChain names the chain of one endpoint of a service port.
func EndpointChain(p catalog.ServicePort, e catalog.Endpoint) string {
	return endpointPrefix + hash(p.String()+string(p.Protocol)+netip.AddrPortFrom(e.IP, uint16(e.Port)).String())
}

// hash is 16 characters of the base32 SHA-256 of s: with the 12 characters of the prefixes,
// 28, the longest chain name iptables takes.
func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// IsOwned reports whether a chain is kubeproxy's (and so may be flushed or deleted by it).
func IsOwned(chain string) bool { return strings.HasPrefix(chain, Prefix) }

// Jump is a rule in a built-in chain that sends traffic into one of kubeproxy's chains. They
// are kept in place chain by chain (netfilter.Interface.EnsureFirst, with go-iptables), not by
// the restore, which never touches built-in chains. A jump is known by its comment and target,
// so no two in a chain share both, and a jump whose matches change needs a new comment.
type Jump struct {
	Table, Chain string // e.g. nat, PREROUTING
	Rule         []string
}

// Jumps are the rules kubeproxy keeps at the top of the built-in chains, in this order within
// a chain: service portals in nat PREROUTING and OUTPUT, masquerade in nat POSTROUTING, and in
// filter the rejection of services without endpoints for new connections and the forwarding
// of service traffic (Docker's FORWARD policy is DROP). Unlike kube-proxy, which only adds a
// missing jump, kubeproxy moves them back above rules that other programs insert later (the
// CNI firewall plugin's ACCEPT of pod traffic at the top of FORWARD would let connections to
// Services without endpoints past the REJECT).
func Jumps() []Jump {
	portals := []string{"-m", "comment", "--comment", "minik8s service portals", "-j", ChainServices}
	newPortals := []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "minik8s service portals", "-j", ChainServices}
	external := []string{"-m", "conntrack", "--ctstate", "NEW", "-m", "comment", "--comment", "minik8s externally-visible service portals", "-j", ChainExternalServices}
	return []Jump{
		{TableNAT, "PREROUTING", portals},
		{TableNAT, "OUTPUT", portals},
		{TableNAT, "POSTROUTING", []string{"-m", "comment", "--comment", "minik8s postrouting rules", "-j", ChainPostrouting}},
		{TableFilter, "INPUT", external},
		{TableFilter, "FORWARD", external},
		{TableFilter, "FORWARD", newPortals},
		{TableFilter, "OUTPUT", newPortals},
		{TableFilter, "FORWARD", []string{"-m", "comment", "--comment", "minik8s forwarding rules", "-j", ChainForward}},
	}
}

// Build computes the ruleset for ports (catalog.ServicePorts, in its order) on a node with
// options o. Same input, same output, byte for byte.
func Build(ports []catalog.ServicePort, o Options) *Ruleset {
	b := builder{o: o}
	nat := Table{Name: TableNAT}
	filter := Table{Name: TableFilter}

	services := Chain{Name: ChainServices}
	nodePorts := Chain{Name: ChainNodePorts}
	rejects := Chain{Name: ChainServices}
	externalRejects := Chain{Name: ChainExternalServices}
	var perService []Chain

	for _, p := range ports {
		proto := strings.ToLower(string(p.Protocol))
		name := p.String()
		if len(p.Endpoints) == 0 {
			// kube-proxy's answer to "no endpoints": refuse at once rather than let clients
			// time out. REJECT is only allowed in the filter table.
			rejects.Rules = append(rejects.Rules, b.rule(ChainServices).dst(p.ClusterIP).proto(proto).
				comment(name+" has no endpoints").dport(proto, p.Port).reject())
			if p.NodePort != 0 {
				externalRejects.Rules = append(externalRejects.Rules, b.rule(ChainExternalServices).proto(proto).
					comment(name+" has no endpoints").m("addrtype", "--dst-type", "LOCAL").dport(proto, p.NodePort).reject())
			}
			continue
		}
		svcChain := ServiceChain(p)
		services.Rules = append(services.Rules, b.rule(ChainServices).dst(p.ClusterIP).proto(proto).
			comment(name+" cluster IP").dport(proto, p.Port).jump(svcChain))
		if p.NodePort != 0 {
			// Traffic from outside to a NodePort is masqueraded: the endpoint may be on
			// another node, and its reply must come back through this one.
			r := b.rule(ChainNodePorts).proto(proto).comment(name).dport(proto, p.NodePort)
			nodePorts.Rules = append(nodePorts.Rules, r.jump(ChainMarkMasq), r.jump(svcChain))
		}
		svc := Chain{Name: svcChain}
		if o.ClusterCIDR.IsValid() {
			svc.Rules = append(svc.Rules, b.rule(svcChain).notSrc(o.ClusterCIDR).dst(p.ClusterIP).proto(proto).
				comment(name+" cluster IP").dport(proto, p.Port).jump(ChainMarkMasq))
		}
		seps := make([]Chain, len(p.Endpoints))
		for i, e := range p.Endpoints {
			seps[i].Name = EndpointChain(p, e)
		}
		if p.AffinitySeconds > 0 {
			// A client seen within the timeout goes back to the endpoint it had.
			for i, e := range p.Endpoints {
				svc.Rules = append(svc.Rules, b.rule(svcChain).comment(name+" -> "+addrPort(e)).
					m("recent", "--rcheck", "--seconds", strconv.Itoa(int(p.AffinitySeconds)), "--reap", "--name", seps[i].Name, "--mask", "255.255.255.255", "--rsource").
					jump(seps[i].Name))
			}
		}
		n := len(p.Endpoints)
		for i, e := range p.Endpoints {
			r := b.rule(svcChain).comment(name + " -> " + addrPort(e))
			if left := n - i; left > 1 {
				switch o.Balance {
				case RoundRobin:
					// Of the connections that reach this rule, every left-th is taken.
					r = r.m("statistic", "--mode", "nth", "--every", strconv.Itoa(left), "--packet", "0")
				default:
					r = r.m("statistic", "--mode", "random", "--probability", probability(left))
				}
			}
			svc.Rules = append(svc.Rules, r.jump(seps[i].Name))
		}
		for i, e := range p.Endpoints {
			sep := &seps[i]
			// Hairpin: a pod reaching its own Service is masqueraded, or it would get the
			// reply from its own address and drop it.
			sep.Rules = append(sep.Rules, b.rule(sep.Name).src(e.IP).comment(name).jump(ChainMarkMasq))
			r := b.rule(sep.Name).proto(proto).comment(name)
			if p.AffinitySeconds > 0 {
				r = r.m("recent", "--set", "--name", sep.Name, "--mask", "255.255.255.255", "--rsource")
			}
			sep.Rules = append(sep.Rules, string(r)+" -j DNAT --to-destination "+addrPort(e))
		}
		perService = append(perService, svc)
		perService = append(perService, seps...)
	}

	// NodePorts come last in MINIK8S-SERVICES, as kube-proxy's "must be the last rule".
	const npComment = "minik8s service nodeports; NOTE: this must be the last rule in this chain"
	if len(o.NodePortAddresses) == 0 {
		services.Rules = append(services.Rules, b.rule(ChainServices).notDst(netip.MustParsePrefix("127.0.0.0/8")).
			comment(npComment).m("addrtype", "--dst-type", "LOCAL").jump(ChainNodePorts))
	} else {
		for _, pfx := range o.NodePortAddresses {
			services.Rules = append(services.Rules, b.rule(ChainServices).dstPrefix(pfx).comment(npComment).jump(ChainNodePorts))
		}
	}

	postrouting := Chain{Name: ChainPostrouting, Rules: []string{
		"-A " + ChainPostrouting + " -m mark ! --mark " + MasqueradeMark + "/" + MasqueradeMark + " -j RETURN",
		// Clear the mark so that a packet going through the tables again is not masqueraded twice.
		"-A " + ChainPostrouting + " -j MARK --set-xmark " + MasqueradeMark + "/0x0",
		"-A " + ChainPostrouting + ` -m comment --comment "minik8s service traffic requiring SNAT" -j MASQUERADE`,
	}}
	markMasq := Chain{Name: ChainMarkMasq, Rules: []string{"-A " + ChainMarkMasq + " -j MARK --set-xmark " + MasqueradeMark + "/" + MasqueradeMark}}
	forward := Chain{Name: ChainForward, Rules: []string{
		"-A " + ChainForward + ` -m comment --comment "minik8s forwarding rules" -m mark --mark ` + MasqueradeMark + "/" + MasqueradeMark + " -j ACCEPT",
		"-A " + ChainForward + ` -m comment --comment "minik8s forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT`,
	}}

	nat.Chains = append([]Chain{services, nodePorts, postrouting, markMasq}, perService...)
	filter.Chains = []Chain{rejects, externalRejects, forward}
	return &Ruleset{Tables: []Table{nat, filter}}
}

func addrPort(e catalog.Endpoint) string {
	return netip.AddrPortFrom(e.IP, uint16(e.Port)).String()
}

// probability is 1/left as iptables prints it back: the statistic match keeps it as a fraction
// of 2^31 and prints eleven decimals, so writing that value makes a saved rule equal to ours.
func probability(left int) string {
	v := math.Round(float64(1<<31)/float64(left)) / float64(1<<31)
	return strconv.FormatFloat(v, 'f', 11, 64)
}

// builder writes rules in the order iptables-save prints their parts: source, destination,
// protocol, then matches in the order given, then the target.
type builder struct{ o Options }

type rule string

func (builder) rule(chain string) rule { return rule("-A " + chain) }

func (r rule) src(ip netip.Addr) rule { return r + rule(" -s "+ip.String()+"/32") }

func (r rule) notSrc(p netip.Prefix) rule { return r + rule(" ! -s "+p.Masked().String()) }

func (r rule) dst(ip netip.Addr) rule { return r + rule(" -d "+ip.String()+"/32") }

func (r rule) dstPrefix(p netip.Prefix) rule { return r + rule(" -d "+p.Masked().String()) }

func (r rule) notDst(p netip.Prefix) rule { return r + rule(" ! -d "+p.Masked().String()) }

func (r rule) proto(p string) rule { return r + rule(" -p "+p) }

func (r rule) comment(c string) rule { return r + rule(` -m comment --comment "`+c+`"`) }

func (r rule) m(module string, args ...string) rule {
	return r + rule(" -m "+module+" "+strings.Join(args, " "))
}

func (r rule) dport(proto string, port int32) rule {
	return r + rule(" -m "+proto+" --dport "+strconv.Itoa(int(port)))
}

func (r rule) jump(chain string) string { return string(r) + " -j " + chain }

func (r rule) reject() string { return string(r) + " -j REJECT --reject-with icmp-port-unreachable" }
