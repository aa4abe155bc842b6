package server

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

// proxyMethods are the methods the proxy subresources pass on, as kube-apiserver's.
var proxyMethods = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodPost: true,
	http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true}

// proxyLocation is where a proxy subresource request goes.
type proxyLocation struct {
	// url is the backend's scheme and host.
	url *url.URL
	// kubelet marks the kubelet's own endpoint: reached with the kubelet client and the
	// apiserver's credentials.
	kubelet bool
}

// proxy serves pods/<name>/proxy, services/<name>/proxy and nodes/<name>/proxy with any
// method: the request, with the path after /proxy and its query, goes to a pod's IP, a
// ready endpoint of the service, or the node's kubelet, and the answer (or the upgraded
// connection) comes back as it is, streamed.
func (s *Server) proxy(c *gin.Context, t target) {
	ctx := c.Request.Context()
	var loc proxyLocation
	var err error
	switch t.res.Plural {
	case "pods":
		loc, err = s.podProxyLocation(ctx, t)
	case "services":
		loc, err = s.serviceProxyLocation(ctx, t)
	case "nodes":
		loc, err = s.nodeProxyLocation(ctx, t)
	default:
		err = apierror.New(apierror.ErrNotFound, "the server could not find the requested resource")
	}
	if err != nil {
		writeError(c, err)
		return
	}
	rest, prefix := proxyPath(c.Request.URL.Path, t)
	if rest == "" && (c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead) && !isUpgrade(c.Request) {
		// As kube-apiserver: the backend's root is <...>/proxy/, so relative links resolve.
		target := c.Request.URL.Path + "/"
		if c.Request.URL.RawQuery != "" {
			target += "?" + c.Request.URL.RawQuery
		}
		c.Header("Location", target)
		c.Status(http.StatusMovedPermanently)
		return
	}
	transport := s.proxyTransport
	if loc.kubelet {
		if s.cfg.Kubelet == nil {
			writeError(c, apierror.New(apierror.ErrUnavailable, "no kubelet client is configured on this apiserver"))
			return
		}
		transport = s.cfg.Kubelet.HTTP.Transport
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			out := *loc.url
			out.Path, out.RawPath, out.RawQuery = rest, "", pr.In.URL.RawQuery
			if out.Path == "" {
				out.Path = "/"
			}
			pr.Out.URL = &out
			// The caller's credentials and impersonation are the apiserver's business.
			pr.Out.Header.Del("Authorization")
			for h := range pr.Out.Header {
				if strings.HasPrefix(h, "Impersonate-") {
					pr.Out.Header.Del(h)
				}
			}
			if loc.kubelet {
				pr.Out.Header.Set("Authorization", "Bearer "+s.cfg.Kubelet.Token)
			}
			pr.Out.Header.Set("X-Forwarded-Uri", forwardedURI(prefix, rest))
			if ip, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
				if prior := pr.In.Header.Values("X-Forwarded-For"); len(prior) > 0 {
					ip = strings.Join(prior, ", ") + ", " + ip
				}
				pr.Out.Header.Set("X-Forwarded-For", ip)
			}
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			for _, h := range []string{"Access-Control-Allow-Credentials", "Access-Control-Allow-Headers", "Access-Control-Allow-Methods", "Access-Control-Allow-Origin"} {
				resp.Header.Del(h)
			}
			if l := resp.Header.Get("Location"); l != "" && resp.StatusCode != http.StatusSwitchingProtocols {
				resp.Header.Set("Location", rewriteLocation(l, loc.url.Host, c.Request.Host, prefix))
				return nil
			}
			// The links of a page, as kube-apiserver rewrites them, so that a UI served from
			// the backend's root works below the proxy path.
			if isHTML(resp) && c.Request.Method != http.MethodHead {
				rewriteHTMLResponse(resp, func(u string) string { return rewriteLocation(u, loc.url.Host, c.Request.Host, prefix) }, s.log)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(c, apierror.New(apierror.ErrUnavailable, "error trying to reach service: %v", err))
		},
	}
	// The backend may answer while the client still sends (a stream both ways); net/http
	// would otherwise wait for the rest of the request body before sending the answer.
	_ = http.NewResponseController(c.Writer).EnableFullDuplex()
	rp.ServeHTTP(c.Writer, c.Request)
}

// proxyPath splits a proxy request's path into the part after .../<name>/proxy, which goes
// to the backend, and the apiserver's prefix up to and including /proxy. The backend's part
// is cleaned as kube-apiserver joins it ("a/../../b" cannot climb above the backend's root),
// its trailing slash kept.
func proxyPath(urlPath string, t target) (rest, prefix string) {
	marker := "/" + t.res.Plural + "/" + t.name + "/proxy"
	if i := strings.Index(urlPath, marker+"/"); i >= 0 {
		prefix = urlPath[:i+len(marker)]
		rest = path.Clean(urlPath[len(prefix):])
		if strings.HasSuffix(urlPath, "/") && !strings.HasSuffix(rest, "/") {
			rest += "/"
		}
		return rest, prefix
	}
	return "", urlPath
}

// forwardedURI is the path the client asked the apiserver for, as X-Forwarded-Uri.
func forwardedURI(prefix, rest string) string {
	u := path.Join(prefix, rest)
	if strings.HasSuffix(rest, "/") && !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// rewriteLocation points a backend's redirect back through the apiserver, as kube-apiserver's
// proxy transport does: an absolute path, or a URL on the backend's (or the client's) host,
// gets the proxy prefix; a relative one or another host's is left alone.
func rewriteLocation(location, backendHost, requestHost, prefix string) string {
	u, err := url.Parse(location)
	if err != nil {
		return location
	}
	if (u.Host != "" && u.Host != backendHost && u.Host != requestHost) || !strings.HasPrefix(u.Path, "/") {
		return location
	}
	if u.Host != requestHost {
		u.Scheme, u.Host = "", ""
	}
	if strings.HasPrefix(u.Path, prefix) {
		return u.String()
	}
	slash := strings.HasSuffix(u.Path, "/")
	u.Path = path.Join(prefix, u.Path)
	if slash {
		u.Path += "/"
	}
	u.RawPath = ""
	return u.String()
}

func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// splitProxyName reads the <name>, <name>:<port> or <scheme>:<name>:<port> a proxy request
// names, the scheme being http or https.
func splitProxyName(kind, id string) (scheme, name, port string, err error) {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(id)
	if !ok {
		return "", "", "", apierror.New(apierror.ErrBadRequest, "invalid %s request %q", kind, id)
	}
	if scheme == "" {
		scheme = "http"
	}
	return scheme, name, port, nil
}

// podProxyLocation is the pod's IP at the port named, else its first declared container port,
// as kube-apiserver resolves pods/<name>[:<port>]/proxy.
func (s *Server) podProxyLocation(ctx context.Context, t target) (proxyLocation, error) {
	sch, name, port, err := splitProxyName("pod", t.name)
	if err != nil {
		return proxyLocation{}, err
	}
	obj, _, err := s.reg.Read(ctx, target{res: t.res, namespace: t.namespace, name: name}.key())
	if err != nil {
		return proxyLocation{}, err
	}
	pod := obj.(*corev1.Pod)
	return podLocation(pod, sch, port)
}

// podLocation is the decision of podProxyLocation on a pod read.
func podLocation(pod *corev1.Pod, sch, port string) (proxyLocation, error) {
	if port == "" {
		for _, ct := range pod.Spec.Containers {
			if len(ct.Ports) > 0 {
				port = strconv.Itoa(int(ct.Ports[0].ContainerPort))
				break
			}
		}
	}
	// The pod's primary IP.
	addr := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		addr = pod.Status.PodIPs[0].IP
	}
	if ip := net.ParseIP(addr); ip == nil || !ip.IsGlobalUnicast() {
		return proxyLocation{}, apierror.New(apierror.ErrBadRequest, "address not allowed")
	}
	host := addr
	switch {
	case port != "":
		host = net.JoinHostPort(addr, port)
	case strings.Contains(addr, ":"):
		host = "[" + addr + "]"
	}
	return proxyLocation{url: &url.URL{Scheme: sch, Host: host}}, nil
}

// serviceProxyLocation is a ready endpoint of the service on the port named (by the service
// port's name or number; the service's unnamed port when none), as kube-apiserver resolves
// services/<name>[:<port>]/proxy through the service's Endpoints.
func (s *Server) serviceProxyLocation(ctx context.Context, t target) (proxyLocation, error) {
	sch, name, port, err := splitProxyName("service", t.name)
	if err != nil {
		return proxyLocation{}, err
	}
	obj, _, err := s.reg.Read(ctx, target{res: t.res, namespace: t.namespace, name: name}.key())
	if err != nil {
		return proxyLocation{}, err
	}
	svc := obj.(*corev1.Service)
	endpoints, _ := scheme.Lookup("endpoints")
	epObj, _, err := s.reg.Read(ctx, target{res: endpoints, namespace: t.namespace, name: name}.key())
	if err != nil {
		return proxyLocation{}, err
	}
	pods, _ := scheme.Lookup("pods")
	podOf := func(name string) *corev1.Pod {
		obj, _, err := s.reg.Read(ctx, target{res: pods, namespace: t.namespace, name: name}.key())
		if err != nil {
			return nil
		}
		return obj.(*corev1.Pod)
	}
	return serviceLocation(svc, epObj.(*corev1.Endpoints), sch, port, t.name, func(addr corev1.EndpointAddress) bool {
		return endpointIsPod(addr, t.namespace, podOf)
	})
}

// endpointIsPod reports whether an Endpoints address is the current IP of the pod in the
// service's namespace that it names, as kube-apiserver checks before proxying to it: an
// Endpoints object written by hand cannot send the apiserver anywhere else.
func endpointIsPod(addr corev1.EndpointAddress, namespace string, podOf func(name string) *corev1.Pod) bool {
	ref := addr.TargetRef
	if ref == nil || ref.Kind != "Pod" || ref.Namespace != namespace || ref.Name == "" {
		return false
	}
	pod := podOf(ref.Name)
	if pod == nil {
		return false
	}
	if pod.Status.PodIP == addr.IP {
		return true
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == addr.IP {
			return true
		}
	}
	return false
}

// serviceLocation is the decision of serviceProxyLocation on the service and its Endpoints:
// a random ready address that valid accepts.
func serviceLocation(svc *corev1.Service, eps *corev1.Endpoints, sch, port, id string, valid func(corev1.EndpointAddress) bool) (proxyLocation, error) {
	if n, err := strconv.Atoi(port); err == nil {
		found := false
		for _, p := range svc.Spec.Ports {
			if int(p.Port) == n {
				port, found = p.Name, true
				break
			}
		}
		if !found {
			return proxyLocation{}, apierror.New(apierror.ErrUnavailable, "no service port %d found for service %q", n, svc.Name)
		}
	}
	if len(eps.Subsets) == 0 {
		return proxyLocation{}, apierror.New(apierror.ErrUnavailable, "no endpoints available for service %q", svc.Name)
	}
	// A random ready address, as kube-apiserver spreads proxied requests.
	first := rand.IntN(len(eps.Subsets))
	for i := range eps.Subsets {
		ss := eps.Subsets[(first+i)%len(eps.Subsets)]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name != port {
				continue
			}
			start := rand.IntN(len(ss.Addresses))
			for try := range ss.Addresses {
				addr := ss.Addresses[(start+try)%len(ss.Addresses)]
				if !valid(addr) {
					continue
				}
				host := net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port)))
				return proxyLocation{url: &url.URL{Scheme: sch, Host: host}}, nil
			}
		}
	}
	return proxyLocation{}, apierror.New(apierror.ErrUnavailable, "no endpoints available for service %q", id)
}

// nodeProxyLocation is the node's kubelet (no port, or the kubelet's), reached with the
// apiserver's kubelet credentials, else the port named on the node's address, without them.
func (s *Server) nodeProxyLocation(ctx context.Context, t target) (proxyLocation, error) {
	sch, name, port, err := splitProxyName("node", t.name)
	if err != nil {
		return proxyLocation{}, err
	}
	obj, _, err := s.reg.Read(ctx, target{res: t.res, name: name}.key())
	if err != nil {
		return proxyLocation{}, err
	}
	kubelet, err := kubeletURLOf(obj.(*corev1.Node))
	if err != nil {
		return proxyLocation{}, err
	}
	loc := nodeLocation(kubelet, sch, port)
	if err := proxyableHost(ctx, net.DefaultResolver, kubelet.Hostname(), loc.kubelet); err != nil {
		return proxyLocation{}, err
	}
	return loc, nil
}

// resolver finds a host name's addresses; net.DefaultResolver is one.
type resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// proxyableHost refuses a node address that is, or resolves to, a link-local address (a
// cloud's metadata service) or, except for the kubelet itself, a loopback one: nodes/proxy
// must not reach the apiserver host's own services (etcd on 127.0.0.1:2379). kube-apiserver
// refuses loopback nodes altogether; minik8s lets a kubelet registered on loopback (the e2e
// harness, hollow nodes) be reached, since nothing but the kubelet answers there.
func proxyableHost(ctx context.Context, r resolver, host string, kubelet bool) error {
	var ips []net.IP
	if ip := net.ParseIP(host); ip != nil {
		ips = []net.IP{ip}
	} else {
		addrs, err := r.LookupIPAddr(ctx, host)
		if err != nil {
			return apierror.New(apierror.ErrBadRequest, "%v", err)
		}
		for _, a := range addrs {
			ips = append(ips, a.IP)
		}
	}
	for _, ip := range ips {
		if (ip.IsLoopback() && !kubelet) || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsUnspecified() {
			return apierror.New(apierror.ErrBadRequest, "address not allowed")
		}
	}
	return nil
}

// nodeLocation is the decision of nodeProxyLocation on the kubelet's URL.
func nodeLocation(kubelet *url.URL, sch, port string) proxyLocation {
	if port == "" || port == kubelet.Port() {
		return proxyLocation{url: kubelet, kubelet: true}
	}
	return proxyLocation{url: &url.URL{Scheme: sch, Host: net.JoinHostPort(kubelet.Hostname(), port)}}
}
