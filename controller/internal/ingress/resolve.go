package ingress

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Event reasons of the problems an Ingress can have; each is a Warning event on it.
const (
	ReasonServiceNotFound     = "ServiceNotFound"
	ReasonServicePortNotFound = "ServicePortNotFound"
	ReasonNoClusterIP         = "ServiceWithoutClusterIP"
	ReasonUnsupportedBackend  = "UnsupportedBackend"
	ReasonInvalidPath         = "InvalidPath"
	ReasonInvalidHost         = "InvalidHost"
	ReasonPathConflict        = "PathConflict"
)

// Routes are what nginx serves: one server per host, plus the catch-all server for requests
// whose host no rule names.
type Routes struct {
	Servers  []Server
	CatchAll Server
	// Ingresses counts the Ingresses rendered.
	Ingresses int
}

// Server is one virtual host.
type Server struct {
	// Host is the rule's host ("" for the catch-all server); "*.example.com" matches exactly
	// one more label, as Kubernetes defines it.
	Host      string
	Locations []Location
	// Fallback answers requests no path matches: an Ingress's defaultBackend, or 404 (nil).
	Fallback *Backend
}

// Location is one path of one rule.
type Location struct {
	Path string
	// Exact: the path matches itself only; otherwise it is a Kubernetes Prefix (path element
	// by path element).
	Exact   bool
	Backend Backend
	// Ingress is namespace/name of the Ingress that defined the path.
	Ingress string
}

// Backend is where a path's requests go.
type Backend struct {
	// Service is namespace/name:port as the Ingress wrote it.
	Service string
	// Address is ClusterIP:port; empty when the backend cannot be reached (Problem says why),
	// and the path answers 503.
	Address string
	Problem string
}

// Problem is something wrong with an Ingress, reported as a Warning event on it.
type Problem struct {
	Ingress string // namespace/name
	Reason  string
	Message string
}

// ServiceLookup finds a Service by namespace and name; nil when there is none.
type ServiceLookup func(namespace, name string) *corev1.Service

var (
	// pathRE is what a path may hold here: RFC 3986 path characters without those nginx
	// reads specially ($ for variables, quotes, braces, ;, %-escapes it would decode before
	// matching) and without spaces.
	pathRE = regexp.MustCompile(`^/[A-Za-z0-9._~!&'()*+,=:@/-]*$`)
	// hostRE is a DNS subdomain, optionally with a leading "*." wildcard label.
	hostRE = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// Resolve turns the Ingresses (already of this controller's class) into the Routes nginx
// serves, resolving every backend to its Service's ClusterIP and port, and lists the problems
// found. A pure function: older Ingresses win conflicts (as in ingress-nginx), and the output
// does not depend on the order of the input.
func Resolve(ingresses []*networkingv1.Ingress, services ServiceLookup) (Routes, []Problem) {
	ings := slices.Clone(ingresses)
	slices.SortFunc(ings, func(a, b *networkingv1.Ingress) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var problems []Problem
	report := func(ing *networkingv1.Ingress, reason, format string, args ...any) {
		problems = append(problems, Problem{Ingress: key(ing), Reason: reason, Message: fmt.Sprintf(format, args...)})
	}
	backend := func(ing *networkingv1.Ingress, b networkingv1.IngressBackend) Backend {
		out, reason, msg := resolveBackend(ing.Namespace, b, services)
		if reason != "" {
			report(ing, reason, "%s", msg)
		}
		return out
	}

	servers := map[string]*Server{}
	server := func(host string) *Server {
		s := servers[host]
		if s == nil {
			s = &Server{Host: host}
			servers[host] = s
		}
		return s
	}
	type pathKey struct {
		host, path string
		exact      bool
	}
	owner := map[pathKey]string{}
	cfg := Routes{Ingresses: len(ings)}
	for _, ing := range ings {
		var def *Backend
		if ing.Spec.DefaultBackend != nil {
			b := backend(ing, *ing.Spec.DefaultBackend)
			def = &b
		}
		hosts := map[string]bool{}
		for _, rule := range ing.Spec.Rules {
			if rule.Host != "" && !hostRE.MatchString(rule.Host) {
				report(ing, ReasonInvalidHost, "host %q is not a DNS name (a leading *. is allowed); its rule is skipped", rule.Host)
				continue
			}
			s := server(rule.Host)
			hosts[rule.Host] = true
			if rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				path, exact, ok := normalizePath(p)
				if !ok {
					report(ing, ReasonInvalidPath, "path %q of host %q is not supported (an absolute path of letters, digits and -._~!&'()*+,=:@/); it is skipped", p.Path, rule.Host)
					continue
				}
				pk := pathKey{rule.Host, path, exact}
				if first, taken := owner[pk]; taken {
					report(ing, ReasonPathConflict, "path %q of host %q is already defined by Ingress %s, which is older and wins", p.Path, rule.Host, first)
					continue
				}
				owner[pk] = key(ing)
				s.Locations = append(s.Locations, Location{Path: path, Exact: exact, Backend: backend(ing, p.Backend), Ingress: key(ing)})
			}
		}
		// An Ingress's default backend answers what its hosts' paths do not match, and, for
		// the oldest Ingress that has one, requests for hosts no rule names.
		if def != nil {
			for _, h := range slices.Sorted(maps.Keys(hosts)) {
				if s := server(h); h != "" && s.Fallback == nil {
					s.Fallback = def
				}
			}
			if cfg.CatchAll.Fallback == nil {
				cfg.CatchAll.Fallback = def
			}
		}
	}
	if s, ok := servers[""]; ok {
		cfg.CatchAll.Locations = s.Locations
		delete(servers, "")
	}
	for _, h := range slices.Sorted(maps.Keys(servers)) {
		cfg.Servers = append(cfg.Servers, *servers[h])
	}
	for i := range cfg.Servers {
		sortLocations(cfg.Servers[i].Locations)
	}
	sortLocations(cfg.CatchAll.Locations)
	return cfg, problems
}

// sortLocations orders longest paths first (nginx picks the longest prefix itself; the order
// is for people reading the file), exact before prefix.
func sortLocations(ls []Location) {
	slices.SortFunc(ls, func(a, b Location) int {
		if c := cmp.Compare(len(b.Path), len(a.Path)); c != 0 {
			return c
		}
		if a.Exact != b.Exact {
			if a.Exact {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Path, b.Path)
	})
}

// normalizePath checks a path and returns it as matched: a Prefix path without its trailing
// slash ("/foo/" and "/foo" are the same prefix), ImplementationSpecific read as Prefix.
func normalizePath(p networkingv1.HTTPIngressPath) (path string, exact, ok bool) {
	path = p.Path
	if path == "" {
		path = "/"
	}
	if !pathRE.MatchString(path) || strings.Contains(path, "//") {
		return "", false, false
	}
	exact = p.PathType != nil && *p.PathType == networkingv1.PathTypeExact
	if !exact && len(path) > 1 {
		path = strings.TrimRight(path, "/")
		if path == "" {
			path = "/"
		}
	}
	return path, exact, true
}

func resolveBackend(namespace string, b networkingv1.IngressBackend, services ServiceLookup) (out Backend, reason, msg string) {
	if b.Service == nil {
		out.Problem = "resource backends are not supported"
		return out, ReasonUnsupportedBackend, "a backend names a resource, not a Service; only Service backends are supported, the path answers 503"
	}
	port := b.Service.Port.Name
	if port == "" {
		port = strconv.Itoa(int(b.Service.Port.Number))
	}
	out.Service = namespace + "/" + b.Service.Name + ":" + port
	svc := services(namespace, b.Service.Name)
	if svc == nil {
		out.Problem = fmt.Sprintf("service %s/%s not found", namespace, b.Service.Name)
		return out, ReasonServiceNotFound, fmt.Sprintf("Service %q not found; its paths answer 503", b.Service.Name)
	}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone || svc.Spec.Type == corev1.ServiceTypeExternalName {
		out.Problem = fmt.Sprintf("service %s/%s has no cluster IP", namespace, b.Service.Name)
		return out, ReasonNoClusterIP, fmt.Sprintf("Service %q has no cluster IP (headless or ExternalName); its paths answer 503", b.Service.Name)
	}
	for _, sp := range svc.Spec.Ports {
		if (b.Service.Port.Name != "" && sp.Name == b.Service.Port.Name) || (b.Service.Port.Name == "" && sp.Port == b.Service.Port.Number) {
			if sp.Protocol != "" && sp.Protocol != corev1.ProtocolTCP {
				break
			}
			out.Address = fmt.Sprintf("%s:%d", ip, sp.Port)
			return out, "", ""
		}
	}
	out.Problem = fmt.Sprintf("service %s/%s has no TCP port %s", namespace, b.Service.Name, port)
	return out, ReasonServicePortNotFound, fmt.Sprintf("Service %q has no TCP port %s; its paths answer 503", b.Service.Name, port)
}

func key(ing *networkingv1.Ingress) string { return ing.Namespace + "/" + ing.Name }
