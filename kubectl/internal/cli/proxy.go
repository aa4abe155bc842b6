package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
)

// proxyFlags are kubectl proxy's flags: where it listens and which requests it passes on.
type proxyFlags struct {
	port             int
	address          string
	unixSocket       string
	apiPrefix        string
	www, wwwPrefix   string
	acceptHosts      string
	acceptPaths      string
	rejectPaths      string
	rejectMethods    string
	disableFilter    bool
	appendServerPath bool
}

func newProxy(o *options) *cobra.Command {
	var f proxyFlags
	cmd := &cobra.Command{
		Use:   "proxy [--port=PORT] [--www=static-dir] [--www-prefix=prefix] [--api-prefix=prefix]",
		Short: "Run a proxy to the Kubernetes API server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.proxy(cmd.Context(), cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.port, "port", "p", 8001, "The port on which to run the proxy. Set to 0 to pick a random port.")
	fl.StringVar(&f.address, "address", "127.0.0.1", "The IP address on which to serve on.")
	fl.StringVarP(&f.unixSocket, "unix-socket", "u", "", "Unix socket on which to run the proxy.")
	fl.StringVar(&f.apiPrefix, "api-prefix", "/", "Prefix to serve the proxied API under.")
	fl.StringVarP(&f.www, "www", "w", "", "Also serve static files from the given directory under the specified prefix.")
	fl.StringVarP(&f.wwwPrefix, "www-prefix", "P", "/static/", "Prefix to serve static files under, if static file directory is specified.")
	fl.BoolVar(&f.disableFilter, "disable-filter", false, "If true, disable request filtering in the proxy. This is dangerous, and can leave you vulnerable to XSRF attacks, when used with an accessible port.")
	fl.BoolVar(&f.appendServerPath, "append-server-path", false, "If true, enables automatic path appending of the kube context server path to each request.")
	fl.StringVar(&f.acceptHosts, "accept-hosts", `^localhost$,^127\.0\.0\.1$,^\[::1\]$`, "Regular expression for hosts that the proxy should accept.")
	fl.StringVar(&f.acceptPaths, "accept-paths", `^.*`, "Regular expression for paths that the proxy should accept.")
	fl.StringVar(&f.rejectPaths, "reject-paths", `^/api/.*/pods/.*/exec,^/api/.*/pods/.*/attach`, "Regular expression for paths that the proxy should reject. Paths specified here will be rejected even accepted by --accept-paths.")
	fl.StringVar(&f.rejectMethods, "reject-methods", `^$`, "Regular expression for HTTP methods that the proxy should reject (example --reject-methods='POST,PUT,PATCH'). ")
	return cmd
}

// proxyFilter is what kubectl proxy lets through: hosts, paths and methods by the flags'
// comma-separated regular expressions.
type proxyFilter struct {
	acceptHosts, acceptPaths, rejectPaths, rejectMethods []*regexp.Regexp
}

func compileList(flag, list string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, s := range strings.Split(list, ",") {
		if s == "" {
			continue
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("invalid --%s %q: %w", flag, s, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func anyMatch(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

func newProxyFilter(f proxyFlags) (*proxyFilter, error) {
	var pf proxyFilter
	var err error
	for _, l := range []struct {
		flag, list string
		into       *[]*regexp.Regexp
	}{
		{"accept-hosts", f.acceptHosts, &pf.acceptHosts}, {"accept-paths", f.acceptPaths, &pf.acceptPaths},
		{"reject-paths", f.rejectPaths, &pf.rejectPaths}, {"reject-methods", f.rejectMethods, &pf.rejectMethods},
	} {
		if *l.into, err = compileList(l.flag, l.list); err != nil {
			return nil, err
		}
	}
	return &pf, nil
}

// allows: the host (without its port) is accepted, the path accepted and not rejected, and
// the method not rejected.
func (pf *proxyFilter) allows(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return anyMatch(pf.acceptHosts, host) && anyMatch(pf.acceptPaths, r.URL.Path) &&
		!anyMatch(pf.rejectPaths, r.URL.Path) && !anyMatch(pf.rejectMethods, r.Method)
}

// proxy serves the API server on a local address (or Unix socket) with the kubeconfig's
// credentials until ctx ends, as `kubectl proxy`.
func (o *options) proxy(ctx context.Context, cmd *cobra.Command, f proxyFlags) error {
	rc, err := o.restConfig()
	if err != nil {
		return err
	}
	h, err := proxyHandler(rc, f)
	if err != nil {
		return err
	}
	var ln net.Listener
	if f.unixSocket != "" {
		ln, err = net.Listen("unix", f.unixSocket)
	} else {
		ln, err = net.Listen("tcp", net.JoinHostPort(f.address, strconv.Itoa(f.port)))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Starting to serve on %s\n", ln.Addr())
	srv := &http.Server{Handler: h}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// proxyHandler passes what the filter allows under --api-prefix to the server's same path
// (after the kubeconfig server's own path with --append-server-path), and serves --www under
// --www-prefix.
func proxyHandler(rc *rest.Config, f proxyFlags) (http.Handler, error) {
	var filter *proxyFilter
	if !f.disableFilter {
		var err error
		if filter, err = newProxyFilter(f); err != nil {
			return nil, err
		}
	}
	// Upgrades (exec, port-forward, a pod's WebSocket) pass over HTTP/1.1 only.
	rc = rest.CopyConfig(rc)
	rc.NextProtos = []string{"http/1.1"}
	rt, err := rest.TransportFor(rc)
	if err != nil {
		return nil, err
	}
	server, err := url.Parse(rc.Host)
	if err != nil {
		return nil, err
	}
	prefix := f.apiPrefix
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			rest := strings.TrimPrefix(pr.In.URL.Path, prefix)
			out := *server
			out.Path = "/" + rest
			if f.appendServerPath {
				out.Path = strings.TrimSuffix(server.Path, "/") + out.Path
			}
			out.RawPath = ""
			out.RawQuery = pr.In.URL.RawQuery
			pr.Out.URL = &out
			pr.Out.Host = server.Host
		},
		Transport:     rt,
		FlushInterval: -1,
	}
	mux := http.NewServeMux()
	mux.Handle(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if filter != nil && !filter.allows(r) {
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	if f.www != "" {
		wp := f.wwwPrefix
		if !strings.HasSuffix(wp, "/") {
			wp += "/"
		}
		mux.Handle(wp, http.StripPrefix(wp, http.FileServer(http.Dir(f.www))))
	}
	return mux, nil
}
