package dns

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Limits, as Kubernetes validates and trims them (MaxDNSNameservers, MaxDNSSearchPaths,
// MaxDNSSearchListChars; a search domain longer than a DNS subdomain makes some resolvers
// abort).
const (
	MaxNameservers     = 3
	MaxSearchPaths     = 32
	MaxSearchListChars = 2048
	maxDomainLength    = 253
)

// DefaultClusterDomain is --cluster-domain's default.
const DefaultClusterDomain = "cluster.local"

// ClusterFirstOptions are the options of a ClusterFirst pod: a name with fewer than five dots
// is tried with the search path first, so `web` and `web.prod` find Services.
var ClusterFirstOptions = []string{"ndots:5"}

// ResolvConf is the content of a resolv.conf.
type ResolvConf struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// Config is what the kubelet knows about DNS.
type Config struct {
	// ClusterDNS are the cluster DNS servers (--cluster-dns). Empty keeps ClusterFirst pods
	// on the node's resolver, as before there was a cluster DNS.
	ClusterDNS []string
	// ClusterDomain (--cluster-domain) makes the search path <ns>.svc.<domain> svc.<domain>
	// <domain>; empty adds nothing.
	ClusterDomain string
	// Host is the node's resolver configuration (--resolv-conf), read when the pod's
	// sandbox is made.
	Host ResolvConf
}

// ForPod returns the resolv.conf of pod's containers, or nil when the pod resolves as the node
// does and asks for nothing more: then the runtime's own copy of the node's resolv.conf stays
// (Docker's, which also drops loopback resolvers a container cannot reach). Warnings say what
// was left out to fit the limits; they become events on the pod. An unknown dnsPolicy is an
// error (the apiserver refuses it).
func ForPod(pod *corev1.Pod, cfg Config) (*ResolvConf, []string, error) {
	var rc ResolvConf
	switch policy := pod.Spec.DNSPolicy; {
	case policy == corev1.DNSNone:
	case (policy == "" || policy == corev1.DNSClusterFirst) && !pod.Spec.HostNetwork,
		policy == corev1.DNSClusterFirstWithHostNet:
		if len(cfg.ClusterDNS) > 0 {
			rc = ResolvConf{
				Nameservers: append([]string(nil), cfg.ClusterDNS...),
				Searches:    clusterSearches(pod.Namespace, cfg.ClusterDomain, cfg.Host.Searches),
				Options:     append([]string(nil), ClusterFirstOptions...),
			}
			break
		}
		// No cluster DNS is configured: the node's resolver, as Kubernetes falls back.
		fallthrough
	case policy == corev1.DNSDefault, policy == "" || policy == corev1.DNSClusterFirst: // the last: a hostNetwork pod
		if pod.Spec.DNSConfig == nil {
			return nil, nil, nil
		}
		rc = ResolvConf{
			Nameservers: append([]string(nil), cfg.Host.Nameservers...),
			Searches:    append([]string(nil), cfg.Host.Searches...),
			Options:     append([]string(nil), cfg.Host.Options...),
		}
	default:
		return nil, nil, fmt.Errorf("pod %s/%s: unknown dnsPolicy %q", pod.Namespace, pod.Name, pod.Spec.DNSPolicy)
	}
	if c := pod.Spec.DNSConfig; c != nil {
		rc.Nameservers = unique(append(rc.Nameservers, c.Nameservers...))
		rc.Searches = unique(append(rc.Searches, c.Searches...))
		rc.Options = mergeOptions(rc.Options, c.Options)
	}
	var warnings []string
	if len(rc.Nameservers) > MaxNameservers {
		rc.Nameservers = rc.Nameservers[:MaxNameservers]
		warnings = append(warnings, fmt.Sprintf("Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s",
			strings.Join(rc.Nameservers, " ")))
	}
	var trimmed bool
	if rc.Searches, trimmed = fitSearches(rc.Searches); trimmed {
		warnings = append(warnings, fmt.Sprintf("Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s",
			strings.Join(rc.Searches, " ")))
	}
	return &rc, warnings, nil
}

// clusterSearches is <ns>.svc.<domain> svc.<domain> <domain>, then the node's own domains.
func clusterSearches(namespace, domain string, host []string) []string {
	if domain == "" {
		return append([]string(nil), host...)
	}
	return unique(append([]string{namespace + ".svc." + domain, "svc." + domain, domain}, host...))
}

// fitSearches keeps at most MaxSearchPaths domains of at most 253 characters, and drops from
// the end until the line fits MaxSearchListChars.
func fitSearches(s []string) ([]string, bool) {
	trimmed := false
	if len(s) > MaxSearchPaths {
		s, trimmed = s[:MaxSearchPaths], true
	}
	out := s[:0:0]
	for _, d := range s {
		if len(d) > maxDomainLength {
			trimmed = true
			continue
		}
		out = append(out, d)
	}
	for len(out) > 0 && len(strings.Join(out, " ")) > MaxSearchListChars {
		out, trimmed = out[:len(out)-1], true
	}
	return out, trimmed
}

func unique(s []string) []string {
	seen := make(map[string]bool, len(s))
	out := s[:0:0]
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// mergeOptions adds the pod's options to base; an option the pod names again takes the pod's
// value. Order is first appearance (Kubernetes' is a map's, so any order is as good).
func mergeOptions(base []string, pod []corev1.PodDNSConfigOption) []string {
	var names []string
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			names = append(names, name)
		}
		values[name] = value
	}
	for _, o := range base {
		name, value, _ := strings.Cut(o, ":")
		set(name, value)
	}
	for _, o := range pod {
		v := ""
		if o.Value != nil {
			v = *o.Value
		}
		set(o.Name, v)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if v := values[n]; v != "" {
			out = append(out, n+":"+v)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// Parse reads a resolv.conf: nameserver lines, the last search (or domain) line, options
// lines; comments (# or ;) and other keywords are ignored, as the resolver does.
func Parse(data []byte) ResolvConf {
	var rc ResolvConf
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.Nameservers = append(rc.Nameservers, f[1])
		case "search", "domain":
			rc.Searches = append([]string(nil), f[1:]...)
		case "options":
			rc.Options = append(rc.Options, f[1:]...)
		}
	}
	rc.Searches = normalizeSearches(rc.Searches)
	return rc
}

// normalizeSearches drops the trailing dots and the root domain, as Kubernetes does with the
// node's search line.
func normalizeSearches(s []string) []string {
	var out []string
	for _, d := range s {
		d = strings.TrimSuffix(d, ".")
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// Render writes rc as a resolv.conf: search, then nameservers, then options.
func (rc ResolvConf) Render() []byte {
	var b bytes.Buffer
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	for _, ns := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}
