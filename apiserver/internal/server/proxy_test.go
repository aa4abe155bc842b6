package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/apiserver/internal/audit"
	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

func TestProxyPath(t *testing.T) {
	res, _ := scheme.Lookup("pods")
	pods := target{res: res, namespace: "pods", name: "pods"}
	for _, tc := range []struct {
		path, rest, prefix string
	}{
		{"/api/v1/namespaces/pods/pods/pods/proxy", "", "/api/v1/namespaces/pods/pods/pods/proxy"},
		{"/api/v1/namespaces/pods/pods/pods/proxy/", "/", "/api/v1/namespaces/pods/pods/pods/proxy"},
		{"/api/v1/namespaces/pods/pods/pods/proxy/a/proxy/b/", "/a/proxy/b/", "/api/v1/namespaces/pods/pods/pods/proxy"},
		{"/api/v1/namespaces/pods/pods/pods/proxy/a//b/./c", "/a/b/c", "/api/v1/namespaces/pods/pods/pods/proxy"},
		{"/api/v1/namespaces/pods/pods/pods/proxy/a/../../../etc/passwd", "/etc/passwd", "/api/v1/namespaces/pods/pods/pods/proxy"},
		{"/api/v1/namespaces/pods/pods/pods/proxy/a/../", "/", "/api/v1/namespaces/pods/pods/pods/proxy"},
	} {
		if rest, prefix := proxyPath(tc.path, pods); rest != tc.rest || prefix != tc.prefix {
			t.Errorf("proxyPath(%q) = %q, %q, want %q, %q", tc.path, rest, prefix, tc.rest, tc.prefix)
		}
	}
}

func TestRewriteLocation(t *testing.T) {
	const prefix = "/api/v1/namespaces/ns/services/web/proxy"
	for _, tc := range []struct{ in, want string }{
		{"/login?next=/", prefix + "/login?next=/"},
		{"/dir/", prefix + "/dir/"},
		{"http://10.0.0.5:8080/x", prefix + "/x"},
		{"http://localhost:8001/x", "http://localhost:8001" + prefix + "/x"},
		{"https://example.com/x", "https://example.com/x"},
		{"relative/x", "relative/x"},
		{prefix + "/already", prefix + "/already"},
	} {
		if got := rewriteLocation(tc.in, "10.0.0.5:8080", "localhost:8001", prefix); got != tc.want {
			t.Errorf("rewriteLocation(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSplitProxyName(t *testing.T) {
	for _, tc := range []struct{ id, scheme, name, port, err string }{
		{"web", "http", "web", "", ""},
		{"web:8080", "http", "web", "8080", ""},
		{"web:http", "http", "web", "http", ""},
		{"https:web:443", "https", "web", "443", ""},
		{"ftp:web:21", "", "", "", `invalid service request "ftp:web:21"`},
		{"a:b:c:d", "", "", "", `invalid service request "a:b:c:d"`},
		{":80", "", "", "", `invalid service request ":80"`},
	} {
		sch, name, port, err := splitProxyName("service", tc.id)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: err %v, want %q", tc.id, err, tc.err)
			}
			continue
		}
		if err != nil || sch != tc.scheme || name != tc.name || port != tc.port {
			t.Errorf("%q: %q %q %q %v", tc.id, sch, name, port, err)
		}
	}
}

func TestServiceLocation(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80}, {Name: "metrics", Port: 9090}}}}
	eps := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{
		{NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.9"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}},
		{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.5"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9100}}},
	}}
	for _, tc := range []struct {
		port, want, err string
		eps             *corev1.Endpoints
	}{
		{"http", "http://10.0.0.5:8080", "", eps},
		{"80", "http://10.0.0.5:8080", "", eps},
		{"9090", "http://10.0.0.5:9100", "", eps},
		{"metrics", "http://10.0.0.5:9100", "", eps},
		{"81", "", `no service port 81 found for service "web"`, eps},
		{"", "", `no endpoints available for service "web:"`, eps},
		{"http", "", `no endpoints available for service "web"`, &corev1.Endpoints{}},
	} {
		loc, err := serviceLocation(svc, tc.eps, "http", tc.port, "web:"+tc.port, anyAddress)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("port %q: err %v, want %q", tc.port, err, tc.err)
			}
			continue
		}
		if err != nil || loc.url.String() != tc.want || loc.kubelet {
			t.Errorf("port %q: %+v %v, want %s", tc.port, loc, err, tc.want)
		}
	}
}

// staticResolver answers host names from a table.
type staticResolver map[string][]string

func (r staticResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, ip := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
	}
	return out, nil
}

// nodes/proxy reaches no link-local address, and a loopback one only at the kubelet, written
// or resolved.
func TestProxyableHost(t *testing.T) {
	r := staticResolver{"vm": {"192.0.2.2"}, "local": {"192.0.2.2", "127.0.0.1"}, "meta": {"169.254.169.254"}}
	for _, tc := range []struct {
		host             string
		kubelet, another bool // allowed at the kubelet's port, at another port
	}{
		{"192.0.2.2", true, true}, {"10.0.0.2", true, true}, {"fd00::2", true, true}, {"vm", true, true},
		{"127.0.0.1", true, false}, {"::1", true, false}, {"local", true, false},
		{"169.254.169.254", false, false}, {"fe80::1", false, false}, {"0.0.0.0", false, false}, {"meta", false, false},
		{"unknown", false, false},
	} {
		for _, kubelet := range []bool{true, false} {
			want := tc.another
			if kubelet {
				want = tc.kubelet
			}
			err := proxyableHost(t.Context(), r, tc.host, kubelet)
			if (err == nil) != want || (err != nil && !errors.Is(err, apierror.ErrBadRequest)) {
				t.Errorf("%s (kubelet %v): %v, want allowed %v (or a 400)", tc.host, kubelet, err, want)
			}
		}
	}
}

// anyAddress takes every address as its pod's.
func anyAddress(corev1.EndpointAddress) bool { return true }

// Only an address that is the current IP of the pod it names, in the service's namespace, is
// proxied to; a service whose addresses are all otherwise has no endpoint available.
func TestServiceLocationChecksPods(t *testing.T) {
	pods := map[string]*corev1.Pod{
		"a":     {Status: corev1.PodStatus{PodIP: "10.0.0.5", PodIPs: []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}}},
		"moved": {Status: corev1.PodStatus{PodIP: "10.0.0.99"}},
	}
	podOf := func(name string) *corev1.Pod { return pods[name] }
	ref := func(ns, name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name}
	}
	for _, tc := range []struct {
		name string
		addr corev1.EndpointAddress
		ok   bool
	}{
		{"the pod's IP", corev1.EndpointAddress{IP: "10.0.0.5", TargetRef: ref("ns", "a")}, true},
		{"the pod's second IP", corev1.EndpointAddress{IP: "fd00::5", TargetRef: ref("ns", "a")}, true},
		{"no target", corev1.EndpointAddress{IP: "10.0.0.5"}, false},
		{"not a pod", corev1.EndpointAddress{IP: "10.0.0.5", TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "a"}}, false},
		{"another namespace", corev1.EndpointAddress{IP: "10.0.0.5", TargetRef: ref("other", "a")}, false},
		{"a pod that moved", corev1.EndpointAddress{IP: "10.0.0.6", TargetRef: ref("ns", "moved")}, false},
		{"a pod that is gone", corev1.EndpointAddress{IP: "10.0.0.7", TargetRef: ref("ns", "gone")}, false},
	} {
		if got := endpointIsPod(tc.addr, "ns", podOf); got != tc.ok {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.ok)
		}
	}

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	eps := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.6", TargetRef: ref("ns", "moved")}, {IP: "10.0.0.8"}, {IP: "10.0.0.5", TargetRef: ref("ns", "a")}},
		Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}},
	}}}
	valid := func(a corev1.EndpointAddress) bool { return endpointIsPod(a, "ns", podOf) }
	for range 20 {
		loc, err := serviceLocation(svc, eps, "http", "80", "web:80", valid)
		if err != nil || loc.url.Host != "10.0.0.5:8080" {
			t.Fatalf("%+v %v, want the one address that is its pod's", loc.url, err)
		}
	}
	eps.Subsets[0].Addresses = eps.Subsets[0].Addresses[:2]
	if _, err := serviceLocation(svc, eps, "http", "80", "web:80", valid); err == nil || err.Error() != `no endpoints available for service "web:80"` {
		t.Errorf("no valid address: %v", err)
	}
}

// Requests spread over the ready addresses, never to a not-ready one.
func TestServiceLocationSpreads(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	eps := &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{
		Addresses:         []corev1.EndpointAddress{{IP: "10.0.0.5"}, {IP: "10.0.0.6"}},
		NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.9"}},
		Ports:             []corev1.EndpointPort{{Port: 8080}},
	}}}
	seen := map[string]int{}
	for range 200 {
		loc, err := serviceLocation(svc, eps, "http", "", "web", anyAddress)
		if err != nil {
			t.Fatal(err)
		}
		seen[loc.url.Host]++
	}
	if len(seen) != 2 || seen["10.0.0.5:8080"] == 0 || seen["10.0.0.6:8080"] == 0 {
		t.Errorf("200 requests went to %v", seen)
	}
}

func TestPodLocation(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b", Ports: []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 9090}}}}},
		Status: corev1.PodStatus{PodIP: "10.244.1.7"}}
	for _, tc := range []struct{ scheme, port, want string }{
		{"http", "", "http://10.244.1.7:8080"},
		{"https", "8443", "https://10.244.1.7:8443"},
	} {
		if loc, err := podLocation(pod, tc.scheme, tc.port); err != nil || loc.url.String() != tc.want {
			t.Errorf("%s %s: %v %v, want %s", tc.scheme, tc.port, loc.url, err, tc.want)
		}
	}
	p := pod.DeepCopy()
	p.Status.PodIPs = []corev1.PodIP{{IP: "fd00::7"}, {IP: "10.244.1.7"}}
	if loc, err := podLocation(p, "http", ""); err != nil || loc.url.String() != "http://[fd00::7]:8080" {
		t.Errorf("the primary of two IPs: %v %v", loc.url, err)
	}
	p.Spec.Containers = nil
	if loc, err := podLocation(p, "http", ""); err != nil || loc.url.String() != "http://[fd00::7]" {
		t.Errorf("no port: %v %v", loc.url, err)
	}
	for _, ip := range []string{"", "127.0.0.1", "0.0.0.0", "169.254.169.254"} {
		p := pod.DeepCopy()
		p.Status.PodIP = ip
		if _, err := podLocation(p, "http", ""); err == nil || err.Error() != "address not allowed" {
			t.Errorf("pod IP %q: %v", ip, err)
		}
	}
}

func TestNodeLocation(t *testing.T) {
	kubelet, _ := url.Parse("https://192.168.1.4:10250")
	if loc := nodeLocation(kubelet, "http", ""); !loc.kubelet || loc.url.String() != kubelet.String() {
		t.Errorf("no port: %+v", loc)
	}
	if loc := nodeLocation(kubelet, "http", "10250"); !loc.kubelet {
		t.Errorf("kubelet port: %+v", loc)
	}
	if loc := nodeLocation(kubelet, "http", "9100"); loc.kubelet || loc.url.String() != "http://192.168.1.4:9100" {
		t.Errorf("another port: %+v", loc)
	}
}

// echoed is what proxyBackend saw of a request.
type echoed struct {
	Method, Path, Query, Body string
	Auth, ForwardedURI, Host  string
}

// proxyBackend answers with what it was sent, redirects /redirect to /elsewhere, links to
// it from the HTML of /page, and echoes lines after upgrading /upgrade.
func proxyBackend(t *testing.T, ln net.Listener) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, `<a href="/elsewhere">there</a>`)
			return
		case "/upgrade":
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			_ = rw.Flush()
			line, _ := rw.ReadString('\n')
			_, _ = rw.WriteString("echo " + line)
			_ = rw.Flush()
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Backend", "yes")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_ = json.NewEncoder(w).Encode(echoed{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body),
			Auth: r.Header.Get("Authorization"), ForwardedURI: r.Header.Get("X-Forwarded-Uri"), Host: r.Host})
	}))
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// hostIP is an address of this machine that is global unicast, as a pod's IP must be.
func hostIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return ipn.IP.String()
		}
	}
	t.Skip("no global unicast address on this machine to stand for a pod's IP")
	return ""
}

// noRedirect sends one authenticated request without following redirects.
func (h *harness) noRedirect(method, path string) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// pods/proxy, services/proxy and nodes/proxy reach a pod's IP, a service's endpoint and the
// kubelet with the method, path, query and body the client sent; answers come back with
// their headers; failures are Status.
func TestProxySubresources(t *testing.T) {
	var kubeletGot echoed
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kubeletGot = echoed{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
		_, _ = io.WriteString(w, "kubelet_running_pods 1\n")
	}))
	t.Cleanup(kubelet.Close)
	h := newHarnessWith(t, func(c *Config) {
		c.Kubelet = &KubeletClient{HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, Token: "kubelet-token"}
	})
	ip := hostIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	backend := proxyBackend(t, ln)
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	port, _ := strconv.Atoi(portStr)

	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns
	pod := podManifest("p", nil)
	pod["spec"].(map[string]any)["containers"] = []any{map[string]any{"name": "app", "image": "echo:latest",
		"ports": []any{map[string]any{"containerPort": port}}}}
	h.mustDo(http.StatusCreated, "POST", base+"/pods", "", pod, nil)
	var st metav1.Status
	if code, _ := h.do("GET", base+"/pods/p/proxy/x", "", nil, &st); code != 400 || st.Message != "address not allowed" {
		t.Fatalf("pod without an IP: %d %+v", code, st)
	}
	h.mustDo(http.StatusOK, "PATCH", base+"/pods/p/status", "application/merge-patch+json",
		map[string]any{"status": map[string]any{"phase": "Running", "podIP": ip}}, nil)

	h.mustDo(http.StatusCreated, "POST", base+"/services", "", map[string]any{"metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"ports": []any{map[string]any{"name": "http", "port": 80, "targetPort": port}}}}, nil)
	h.mustDo(http.StatusCreated, "POST", base+"/services", "", map[string]any{"metadata": map[string]any{"name": "empty"},
		"spec": map[string]any{"ports": []any{map[string]any{"port": 80}}}}, nil)
	h.mustDo(http.StatusCreated, "POST", base+"/endpoints", "", map[string]any{"metadata": map[string]any{"name": "web"},
		"subsets": []any{map[string]any{"addresses": []any{map[string]any{"ip": ip, "targetRef": map[string]any{"kind": "Pod", "namespace": ns, "name": "p"}}},
			"ports": []any{map[string]any{"name": "http", "port": port}}}}}, nil)
	h.mustDo(http.StatusCreated, "POST", base+"/endpoints", "", map[string]any{"metadata": map[string]any{"name": "empty"}}, nil)

	for _, path := range []string{
		base + "/pods/p/proxy", base + "/pods/p:" + portStr + "/proxy", base + "/pods/http:p:" + portStr + "/proxy",
		base + "/services/web:80/proxy", base + "/services/web:http/proxy", base + "/services/http:web:http/proxy",
	} {
		t.Run(strings.TrimPrefix(path, base), func(t *testing.T) {
			var got echoed
			code, hdr := h.do("POST", path+"/a/b/?x=1&y=2", "text/plain", "hello", &got)
			want := echoed{Method: "POST", Path: "/a/b/", Query: "x=1&y=2", Body: "hello", ForwardedURI: path + "/a/b/", Host: strings.TrimPrefix(h.url, "http://")}
			if code != 200 || got != want {
				t.Fatalf("%d %+v, want %+v", code, got, want)
			}
			if hdr.Get("X-Backend") != "yes" || hdr.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("answer headers %v", hdr)
			}
			for _, m := range []string{"PUT", "PATCH", "DELETE"} {
				if code, _ := h.do(m, path+"/m", "", nil, &got); code != 200 || got.Method != m {
					t.Fatalf("%s: %d %+v", m, code, got)
				}
			}
			if resp := h.noRedirect("GET", path+"?q=1"); resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != path+"/?q=1" {
				t.Fatalf("no trailing slash: %s %v", resp.Status, resp.Header)
			}
			if resp := h.noRedirect("GET", path+"/redirect"); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != path+"/elsewhere" {
				t.Fatalf("redirect: %s %v", resp.Status, resp.Header)
			}
			if code, _, body := h.raw("GET", path+"/page", "", "", nil); code != 200 || string(body) != `<a href="`+path+`/elsewhere">there</a>` {
				t.Fatalf("page: %d %s", code, body)
			}
		})
	}

	t.Run("upgrade", func(t *testing.T) {
		u, _ := url.Parse(h.url)
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "GET "+base+"/services/web:http/proxy/upgrade HTTP/1.1\r\nHost: "+u.Host+"\r\nAuthorization: Bearer "+testToken+
			"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade: %v %v", resp, err)
		}
		_, _ = io.WriteString(conn, "hi\n")
		if line, err := br.ReadString('\n'); err != nil || line != "echo hi\n" {
			t.Fatalf("after the upgrade: %q %v", line, err)
		}
	})

	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{base + "/services/empty/proxy/", 503, `no endpoints available for service "empty"`},
		// The service's port is named, so a request naming none finds no endpoint port.
		{base + "/services/web/proxy/", 503, `no endpoints available for service "web"`},
		{base + "/services/web:81/proxy/", 503, `no service port 81 found for service "web"`},
		{base + "/services/nope/proxy/", 404, `services "nope" not found`},
		{base + "/pods/nope/proxy/", 404, `pods "nope" not found`},
		{base + "/pods/a:b:c:d/proxy/", 400, `invalid pod request "a:b:c:d"`},
		{"/api/v1/nodes/nope/proxy/", 404, `nodes "nope" not found`},
		{base + "/configmaps/x/proxy/", 404, "the server could not find the requested resource"},
	} {
		var st metav1.Status
		if code, _ := h.do("GET", tc.path, "", nil, &st); code != tc.code || st.Kind != "Status" || !strings.Contains(st.Message, tc.msg) {
			t.Errorf("%s: %d %+v, want %d %q", tc.path, code, st, tc.code, tc.msg)
		}
	}

	node := "proxy-" + registry.RandomSuffix()
	h.registerNode(node, strings.TrimPrefix(kubelet.URL, "https://"))
	code, _, body := h.raw("GET", "/api/v1/nodes/"+node+"/proxy/metrics?a=b", "", "", nil)
	if code != 200 || string(body) != "kubelet_running_pods 1\n" {
		t.Fatalf("node proxy: %d %q", code, body)
	}
	if want := (echoed{Method: "GET", Path: "/metrics", Query: "a=b", Auth: "Bearer kubelet-token"}); kubeletGot != want {
		t.Fatalf("kubelet got %+v, want %+v", kubeletGot, want)
	}
	// Another port of a node on loopback would be the apiserver host's own (etcd's, say).
	if code, _ := h.do("GET", "/api/v1/nodes/"+node+":2379/proxy/version", "", nil, &st); code != 400 || st.Message != "address not allowed" {
		t.Fatalf("another port of a node on loopback: %d %+v", code, st)
	}
	backend.Close()
	if code, _ := h.do("GET", base+"/pods/p/proxy/", "", nil, &st); code != 503 || !strings.Contains(st.Message, "error trying to reach service") {
		t.Fatalf("unreachable pod: %d %+v", code, st)
	}
}

// Discovery lists the proxy subresources with upstream's kinds and verbs.
func TestProxyDiscovery(t *testing.T) {
	h := newHarness(t)
	var list metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/api/v1", "", nil, &list)
	want := map[string]string{"pods/proxy": "PodProxyOptions", "services/proxy": "ServiceProxyOptions", "nodes/proxy": "NodeProxyOptions"}
	for _, r := range list.APIResources {
		if kind, ok := want[r.Name]; ok {
			if r.Kind != kind || strings.Join(r.Verbs, ",") != "create,delete,get,patch,update" {
				t.Errorf("%s: %s %v", r.Name, r.Kind, r.Verbs)
			}
			delete(want, r.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("not listed: %v", want)
	}
}

// A proxied request and its answer stream together: the backend reads the start of a body
// the client is still sending and answers, and the client reads that answer before it has
// finished sending, with the audit log recording every request at RequestResponse level.
func TestProxyStreamsBothWays(t *testing.T) {
	firstIn := make(chan string, 1)
	release := make(chan struct{})
	ln, err := net.Listen("tcp", net.JoinHostPort(hostIP(t), "0"))
	if err != nil {
		t.Fatal(err)
	}
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Error(err)
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			t.Errorf("backend read: %v", err)
		}
		firstIn <- string(buf)
		_, _ = io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		<-release
	}))
	backend.Listener.Close()
	backend.Listener = ln
	backend.Start()
	defer backend.Close()
	defer close(release)
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	auditLog := audit.NewLog(audit.LogOptions{Path: filepath.Join(t.TempDir(), "audit.log")}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { auditLog.Close() })
	h := newHarnessWith(t, func(c *Config) { c.Audit = &Audit{Policy: policy, Log: auditLog} })
	ns := h.namespace()
	h.mustDo(http.StatusCreated, "POST", "/api/v1/namespaces/"+ns+"/pods", "", podManifest("p", nil), nil)
	h.mustDo(http.StatusOK, "PATCH", "/api/v1/namespaces/"+ns+"/pods/p/status", "application/merge-patch+json",
		map[string]any{"status": map[string]any{"phase": "Running", "podIP": strings.Split(strings.TrimPrefix(backend.URL, "http://"), ":")[0]}}, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))

	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", h.url+"/api/v1/namespaces/"+ns+"/pods/p:"+port+"/proxy/stream", pr)
	req.Header.Set("Authorization", "Bearer "+testToken)
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		answered <- answer{resp, err}
	}()
	if _, err := io.WriteString(pw, "hello"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-firstIn:
		if got != "hello" {
			t.Fatalf("backend read %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the backend never saw the start of a request body still being sent")
	}
	var a answer
	select {
	case a = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer while the request body is still being sent")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.resp.Body.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(a.resp.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("read %q, %v: want the backend's first part while both sides are open", buf, err)
	}
}

// Methods beyond those kube-apiserver's proxy passes on are refused before any lookup.
func TestProxyMethods(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	for _, m := range []string{"TRACE", "CONNECT"} {
		var st metav1.Status
		code, _ := h.do(m, "/api/v1/namespaces/"+ns+"/pods/p/proxy/x", "", nil, &st)
		if want := "the server does not allow this method on the requested resource (" + m + " pods)"; code != http.StatusMethodNotAllowed || st.Message != want {
			t.Errorf("%s: %d %+v, want 405 %q", m, code, st, want)
		}
	}
}
