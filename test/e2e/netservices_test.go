package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/client"
)

// The networking steps of TestCluster, on its three nodes: pods reach pods across nodes with
// their own source address and the world through masquerade; Services (ClusterIP, NodePort,
// headless, two ports, named target ports, ClientIP affinity, a pod reaching itself) answer
// from pods on several nodes, from every node and from a pod on every node, by address and by
// DNS name; endpoints follow pods; an Ingress routes two paths to two Services from nodes and
// pods; traffic keeps flowing while a node's kubeproxy is stopped.

// netTimeout bounds how long traffic may take to follow a change (endpoints, rules, nginx).
const netTimeout = 90 * time.Second

// batch is how many requests one vantage point makes to one address per try: enough that
// random balancing over two or three endpoints shows each of them.
const batch = 16

// failedAnswer marks a request that got no answer in a batch's output.
const failedAnswer = "FAILED"

var hostnameField = regexp.MustCompile(`"hostname":\s*"([^"]+)"`)

// vantage is a place requests start from: a node (node.sh exec, its network namespace) or a
// pod (kubectl exec, the real kubectl or ours).
type vantage struct {
	name string
	run  func(t *testing.T, script string) string
	// get is the shell command fetching a URL's body to stdout, failing on no answer.
	get string
}

func (c *netCluster) nodeVantage(n *netNode) vantage {
	return vantage{name: "node " + n.name, get: "curl -sf -m 3",
		run: func(t *testing.T, script string) string { return n.exec(t, "sh", "-c", script) }}
}

// podVantage fetches with busybox wget, bounded by timeout: Debian's static busybox crashes
// on wget -T.
func (c *netCluster) podVantage(k kubectl, pod string) vantage {
	return vantage{name: "pod " + pod + " (" + k.name + " kubectl exec)", get: "timeout 3 wget -q -O-",
		run: func(t *testing.T, script string) string { return c.inPod(t, k, pod, script) }}
}

// inPod runs a shell script in a pod of the test namespace and returns its stdout.
func (c *netCluster) inPod(t *testing.T, k kubectl, pod, script string) string {
	t.Helper()
	return k.ok(t, "exec", "-n", c.ns, pod, "--", "sh", "-c", script).stdout
}

// fetch makes batch requests to each URL from v and returns, per URL, who answered each
// (the echo server's hostname, or the body), failedAnswer for no answer or an empty one.
func (v vantage) fetch(t *testing.T, urls ...string) map[string][]string {
	t.Helper()
	var s strings.Builder
	for _, u := range urls {
		fmt.Fprintf(&s, "echo '=== %s'; for i in $(seq %d); do %s '%s' 2>/dev/null | tr -d '\\n'; echo; done; ",
			u, batch, v.get, u)
	}
	out := v.run(t, s.String())
	got := map[string][]string{}
	var cur string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if u, ok := strings.CutPrefix(line, "=== "); ok {
			cur = u
			continue
		}
		if cur == "" {
			continue
		}
		if m := hostnameField.FindStringSubmatch(line); m != nil {
			line = m[1]
		}
		if line == "" {
			line = failedAnswer
		}
		got[cur] = append(got[cur], line)
	}
	return got
}

// answeredBy waits until one batch from v to each URL is answered by exactly the want set:
// every request answered, each of want seen, nobody else. Traffic may take a while to follow
// a change, so earlier batches may differ.
func (v vantage) answeredBy(t *testing.T, want []string, urls ...string) {
	t.Helper()
	deadline := time.Now().Add(netTimeout)
	for {
		got := v.fetch(t, urls...)
		var wrong []string
		for _, u := range urls {
			seen := map[string]bool{}
			for _, a := range got[u] {
				seen[a] = true
			}
			ok := len(got[u]) == batch
			for a := range seen {
				ok = ok && slices.Contains(want, a)
			}
			for _, w := range want {
				ok = ok && seen[w]
			}
			if !ok {
				wrong = append(wrong, fmt.Sprintf("%s: %q", u, got[u]))
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("from %s, want every request answered by one of %q and each of them seen, within %s; last answers:\n%s",
				v.name, want, netTimeout, strings.Join(wrong, "\n"))
		}
		time.Sleep(time.Second)
	}
}

// echoPod is a pod of minik8s/echo on node, in the Services' label app=web, with a named port
// and a readiness probe on it.
func echoPod(name, node string, labels map[string]string) *corev1.Pod {
	grace := int64(2)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: "minik8s/echo:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// filesPod is a busybox pod on node serving its hostname at /files/index.html on 8080 (the
// Service files), and the client the pod vantage points run in.
func filesPod(name, node string) *corev1.Pod {
	p := sleeper(name)
	p.Labels = map[string]string{"app": "files"}
	p.Spec.NodeName = node
	p.Spec.Containers[0].Command = []string{"sh", "-c",
		"mkdir -p /www/files && hostname >/www/files/index.html && exec httpd -f -p 8080 -h /www"}
	return p
}

// networkingSteps runs the networking steps on nodes n1, n2, n3, where pods echo-<node> run.
func (c *netCluster) networkingSteps(t *testing.T, step func(string, func(*testing.T)), n1, n2, n3 *netNode) {
	svcs := client.MustFor[*corev1.Service, *corev1.ServiceList](c.cl)
	endpoints := client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](c.cl)
	nodes := []*netNode{n1, n2, n3}
	clients := map[string]vantage{}   // node name -> the files pod on it
	nodeViews := map[string]vantage{} // node name -> the node itself
	for i, n := range nodes {
		name := "client-" + n.name
		c.createPod(t, filesPod(name, n.name))
		// Both kubectls exec into pods: the real one on the first node, ours on the others.
		k := c.kubectl
		if i == 0 {
			k = c.kubectlReal
		}
		clients[n.name] = c.podVantage(k, name)
		nodeViews[n.name] = c.nodeVantage(n)
	}
	clientIP := map[string]string{}
	for _, n := range nodes {
		p := c.waitPod(t, "client-"+n.name, "Running with an IP", func(p *corev1.Pod) bool { return podRunning(p) && p.Status.PodIP != "" })
		clientIP[n.name] = p.Status.PodIP
	}

	step("pods reach pods on every node by pod IP with their own source address", func(t *testing.T) {
		for _, from := range nodes {
			for _, to := range nodes {
				ip := c.pod(t, "echo-"+to.name).Status.PodIP
				out := c.inPod(t, c.kubectlReal, "client-"+from.name, "timeout 5 wget -q -O- http://"+net.JoinHostPort(ip, "8080")+"/")
				if !strings.Contains(out, `"hostname": "echo-`+to.name+`"`) {
					t.Errorf("client-%s -> echo-%s at %s: answered by someone else:\n%s", from.name, to.name, ip, out)
				}
				if want := `"remoteAddr": "` + clientIP[from.name] + `:`; !strings.Contains(out, want) {
					t.Errorf("client-%s -> echo-%s: the echo server saw another source than the client's pod IP %s (NAT between pods):\n%s",
						from.name, to.name, clientIP[from.name], out)
				}
			}
		}
	})

	step("pods reach addresses outside the cluster through masquerade", func(t *testing.T) {
		hostIP := outsideAddress(t)
		seen := make(chan string, 8)
		ln, err := net.Listen("tcp", net.JoinHostPort(hostIP, "0"))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case seen <- r.RemoteAddr:
			default:
			}
			fmt.Fprintln(w, "outside")
		})}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		for _, n := range nodes {
			out := c.inPod(t, c.kubectl, "client-"+n.name, "timeout 5 wget -q -O- http://"+ln.Addr().String()+"/")
			if strings.TrimSpace(out) != "outside" {
				t.Fatalf("client-%s -> %s: got %q", n.name, ln.Addr(), out)
			}
			src, _, _ := net.SplitHostPort(<-seen)
			if src != n.ip {
				t.Errorf("client-%s (pod IP %s) -> %s: the server saw %s, want the node's address %s (masquerade)",
					n.name, clientIP[n.name], ln.Addr(), src, n.ip)
			}
		}
	})

	dir := t.TempDir()
	manifest := render(t, dir, "network.yaml", manifest{Suffix: "net", NS: c.ns, Rev: "1"})
	var web, files *corev1.Service
	step("Services and an Ingress created before their pods", func(t *testing.T) {
		c.kubectlReal.ok(t, "apply", "-f", manifest)
		var err error
		if web, err = svcs.Get(t.Context(), c.ns, "web", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if files, err = svcs.Get(t.Context(), c.ns, "files", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if web.Spec.ClusterIP == "" || web.Spec.Ports[0].NodePort == 0 || files.Spec.ClusterIP == "" {
			t.Fatalf("web %s:%d, files %s: want ClusterIPs and a NodePort", web.Spec.ClusterIP, web.Spec.Ports[0].NodePort, files.Spec.ClusterIP)
		}
		// No endpoints yet: a connection is refused at once, from a pod and from a node, as
		// kube-proxy does, rather than routed on towards an address nobody owns. kubeproxy
		// keeps its jumps ahead of the CNI plugins' (checked every sync period).
		ip80 := "http://" + net.JoinHostPort(web.Spec.ClusterIP, "80") + "/"
		for deadline := time.Now().Add(netTimeout); ; time.Sleep(time.Second) {
			pod := c.inPod(t, c.kubectl, "client-"+n1.name, "timeout 5 wget -q -O- "+ip80+" 2>&1 || true")
			node := n2.exec(t, "sh", "-c", "curl -sS -m 5 "+ip80+" 2>&1 || true")
			// curl says "Couldn't connect to server" for a refused connection.
			if strings.Contains(pod, "Connection refused") && strings.Contains(node, "Couldn't connect to server") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s without endpoints, after %s: from client-%s %q, from %s %q; want both refused",
					ip80, netTimeout, n1.name, pod, n2.name, node)
			}
		}
		web2 := map[string]string{"app": "web"}
		c.createPod(t, echoPod("web-a", n2.name, web2))
		c.createPod(t, echoPod("web-b", n3.name, web2))
		pollUntil(t, "endpoints web", "two ready addresses", func() (*corev1.Endpoints, error) {
			return endpoints.Get(t.Context(), c.ns, "web", metav1.GetOptions{})
		}, func(e *corev1.Endpoints) bool {
			return len(e.Subsets) == 1 && len(e.Subsets[0].Addresses) == 2 && len(e.Subsets[0].Ports) == 2
		}, nil, c.kubeletTails)
	})

	webURLs := func(from *netNode) []string {
		other := nodes[(slices.Index(nodes, from)+1)%len(nodes)]
		np := strconv.Itoa(int(web.Spec.Ports[0].NodePort))
		return []string{
			"http://" + net.JoinHostPort(web.Spec.ClusterIP, "80") + "/",
			"http://" + net.JoinHostPort(web.Spec.ClusterIP, "8081") + "/",
			"http://" + net.JoinHostPort(from.ip, np) + "/",
			"http://" + net.JoinHostPort(other.ip, np) + "/",
		}
	}
	webNames := func() []string {
		return []string{"http://web/", "http://web." + c.ns + "/", "http://web." + c.ns + ".svc.cluster.local/"}
	}

	step("a Service over pods on two nodes answers from both, from every node and a pod on each", func(t *testing.T) {
		want := []string{"web-a", "web-b"}
		for _, n := range nodes {
			nodeViews[n.name].answeredBy(t, want, webURLs(n)...)
			clients[n.name].answeredBy(t, want, append(webURLs(n), webNames()...)...)
		}
	})

	step("a pod reaches itself through its Service", func(t *testing.T) {
		want := []string{"client-" + n1.name, "client-" + n2.name, "client-" + n3.name}
		clients[n1.name].answeredBy(t, want, "http://"+net.JoinHostPort(files.Spec.ClusterIP, "8080")+"/files/index.html")
	})

	step("ClientIP session affinity keeps a client on one pod", func(t *testing.T) {
		for _, n := range []*netNode{n1, n2} {
			got := clients[n.name].fetch(t, "http://web-sticky/")["http://web-sticky/"]
			if len(got) != batch || slices.Contains(got, failedAnswer) || len(slices.Compact(slices.Sorted(slices.Values(got)))) != 1 {
				t.Errorf("from client-%s, %d requests to web-sticky: want all answered by one pod, got %q", n.name, batch, got)
			}
		}
	})

	step("cluster DNS: resolv.conf, Service names, headless, SRV, upstream names", func(t *testing.T) {
		v := clients[n2.name]
		conf := c.inPod(t, c.kubectl, "client-"+n2.name, "cat /etc/resolv.conf")
		for _, want := range []string{"nameserver 169.254.20.10", "search " + c.ns + ".svc.cluster.local svc.cluster.local cluster.local", "options ndots:5"} {
			if !strings.Contains(conf, want) {
				t.Errorf("the pod's resolv.conf has no %q:\n%s", want, conf)
			}
		}
		lookup := func(args string) string {
			return c.inPod(t, c.kubectl, "client-"+n2.name, "nslookup "+args+" 2>&1 || true")
		}
		// busybox nslookup applies the search path to names without a dot only; web.<ns>
		// through the search path is what the wget requests above resolved.
		for _, name := range []string{"web", "web." + c.ns + ".svc.cluster.local"} {
			if got := answerAddrs(lookup(name)); !slices.Equal(got, []string{web.Spec.ClusterIP}) {
				t.Errorf("nslookup %s from %s: got %q, want the ClusterIP %s", name, v.name, got, web.Spec.ClusterIP)
			}
		}
		podIPs := []string{c.pod(t, "web-a").Status.PodIP, c.pod(t, "web-b").Status.PodIP}
		slices.Sort(podIPs)
		if got := answerAddrs(lookup("web-headless." + c.ns + ".svc.cluster.local")); !slices.Equal(got, podIPs) {
			t.Errorf("nslookup of the headless Service: got %q, want the pod IPs %q", got, podIPs)
		}
		srv := lookup("-type=srv _http._tcp.web." + c.ns + ".svc.cluster.local")
		if !strings.Contains(srv, " 80 web."+c.ns+".svc.cluster.local") {
			t.Errorf("SRV _http._tcp.web: want port 80 on web.%s.svc.cluster.local, got:\n%s", c.ns, srv)
		}
		if out := lookup("nope." + c.ns + ".svc.cluster.local"); !strings.Contains(out, "NXDOMAIN") {
			t.Errorf("a missing Service: want NXDOMAIN, got:\n%s", out)
		}
		// A name outside the cluster is the node's upstream resolver's, answered as this host's
		// resolver answers it.
		host := aptMirrorHost(t)
		want, err := net.DefaultResolver.LookupHost(t.Context(), host)
		if err != nil {
			t.Fatalf("this host cannot resolve %s (the apt mirror) to compare: %v", host, err)
		}
		var want4 []string
		for _, a := range want {
			if ip := net.ParseIP(a); ip.To4() != nil {
				want4 = append(want4, a)
			}
		}
		slices.Sort(want4)
		if got := answerAddrs(lookup("-type=a " + host + ".")); !slices.Equal(got, want4) {
			t.Errorf("nslookup %s from a pod: got %q, want the host's answer %q", host, got, want4)
		}
	})

	step("endpoints follow a deleted and a new pod", func(t *testing.T) {
		if err := c.pods.Delete(t.Context(), c.ns, "web-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			clients[n.name].answeredBy(t, []string{"web-b"}, webURLs(n)[0])
		}
		c.createPod(t, echoPod("web-c", n1.name, map[string]string{"app": "web"}))
		for _, n := range nodes {
			clients[n.name].answeredBy(t, []string{"web-b", "web-c"}, webURLs(n)[0], "http://web/")
		}
	})

	step("an Ingress routes two paths to two Services, from every node and a pod", func(t *testing.T) {
		host := "shop." + c.ns + ".example"
		for _, n := range nodes {
			if hosts := n.exec(t, "cat", "/etc/hosts"); !strings.Contains(hosts, host) {
				t.Errorf("node %s's /etc/hosts has no %s:\n%s", n.name, host, hosts)
			}
		}
		echo := "http://" + host + "/echo/items?x=1"
		page := "http://" + host + "/files/index.html"
		clientNames := []string{"client-" + n1.name, "client-" + n2.name, "client-" + n3.name}
		for _, v := range []vantage{nodeViews[n2.name], clients[n3.name]} {
			v.answeredBy(t, []string{"web-b", "web-c"}, echo)
			v.answeredBy(t, clientNames, page)
		}
		// The echo server shows the path nginx passed on.
		if out := nodeViews[n1.name].run(t, "curl -sf -m 5 '"+echo+"'"); !strings.Contains(out, `"path": "/echo/items"`) {
			t.Errorf("GET %s answered without its path:\n%s", echo, out)
		}
		missing := "http://" + host + "/missing"
		if code := nodeViews[n1.name].run(t, "curl -s -m 5 -o /dev/null -w '%{http_code}' "+missing); code != "503" {
			t.Errorf("GET %s (Service nope does not exist): status %s, want 503", missing, code)
		}
		if out := c.inPod(t, c.kubectl, "client-"+n2.name, "timeout 5 wget -q -O- "+missing+" 2>&1 || true"); !strings.Contains(out, "503") {
			t.Errorf("GET %s from a pod: want a 503, got %q", missing, out)
		}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "describe", "ingress", "shop", "-n", c.ns).stdout
			if !strings.Contains(out, "ServiceNotFound") || !strings.Contains(out, "nope") {
				t.Errorf("%s kubectl describe ingress: want a ServiceNotFound event naming nope:\n%s", k.name, out)
			}
			row := rowOf(k.ok(t, "get", "ingress", "-n", c.ns).stdout, "shop")
			if len(row) < 4 || row[2] != host || net.ParseIP(row[3]) == nil {
				t.Errorf("%s kubectl get ingress: row %q, want the host %s and an address", k.name, row, host)
			}
		}
		// A change reloads nginx without failing the requests under way: a node keeps asking
		// while a path is added, until the new path answers.
		stop := filepath.Join(t.TempDir(), "stop")
		type loopResult struct {
			out string
			err error
		}
		done := make(chan loopResult, 1)
		go func() {
			out, err := c.script(t.Context(), nil, "node.sh", "exec", n2.name, "--", "sh", "-c",
				"n=0; until [ -e "+stop+" ] && [ $n -ge 20 ]; do curl -s -m 5 -o /dev/null -w '%{http_code}\\n' '"+echo+"'; n=$((n+1)); sleep 0.05; done")
			done <- loopResult{out, err}
		}()
		c.kubectlReal.ok(t, "patch", "ingress", "shop", "-n", c.ns, "--type=json", "-p",
			`[{"op":"add","path":"/spec/rules/0/http/paths/-","value":{"path":"/added","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}}]`)
		nodeViews[n1.name].answeredBy(t, []string{"web-b", "web-c"}, "http://"+host+"/added")
		writeFile(t, stop, "")
		res := <-done
		if res.err != nil {
			t.Fatalf("%v\n%s", res.err, res.out)
		}
		codes := strings.Fields(res.out)
		if bad := slices.DeleteFunc(slices.Clone(codes), func(s string) bool { return s == "200" }); len(codes) < 20 || len(bad) > 0 {
			t.Errorf("requests while nginx reloaded: %d of %d not 200: %q", len(bad), len(codes), bad)
		}
		c.kubectlReal.ok(t, "delete", "ingress", "shop", "-n", c.ns)
		for _, n := range nodes {
			eventually(t, netTimeout, host+" out of node "+n.name+"'s /etc/hosts", func() bool {
				return !strings.Contains(n.exec(t, "cat", "/etc/hosts"), host)
			})
		}
	})

	step("traffic flows while a node's kubeproxy is stopped, and it catches up on start", func(t *testing.T) {
		c.nodeSh(t, "stop", n1.name, "kubeproxy")
		want := []string{"web-b", "web-c"}
		clients[n1.name].answeredBy(t, want, webURLs(n1)[0], webURLs(n1)[2])
		nodeViews[n1.name].answeredBy(t, want, webURLs(n1)[0])
		late := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web-late", Namespace: c.ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Port: 82, TargetPort: intstr.FromInt32(8080)}}},
		}
		late, err := svcs.Create(t.Context(), late, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.nodeSh(t, "start", n1.name, "kubeproxy")
		clients[n1.name].answeredBy(t, want, webURLs(n1)[0], "http://"+net.JoinHostPort(late.Spec.ClusterIP, "82")+"/", "http://web-late:82/")
	})
}

// answerAddrs is the sorted addresses busybox nslookup printed as answers (the server's own
// address line carries a port and is left out).
func answerAddrs(out string) []string {
	var addrs []string
	for _, line := range strings.Split(out, "\n") {
		if a, ok := strings.CutPrefix(line, "Address:"); ok {
			a = strings.TrimSpace(a)
			if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
				addrs = append(addrs, a)
			}
		}
	}
	slices.Sort(addrs)
	return addrs
}

// outsideAddress is this host's own address on its default route: outside every cluster
// network, reached by pods through their node.
func outsideAddress(t *testing.T) string {
	t.Helper()
	f := strings.Fields(execOK(t, "ip", "-4", "-o", "route", "get", "192.0.2.250"))
	for i, w := range f {
		if w == "src" && i+1 < len(f) {
			return f[i+1]
		}
	}
	t.Fatalf("no source address for outside traffic in %q", f)
	return ""
}

// aptMirrorHost is the host name of this machine's first apt source: a name its resolver
// answers for.
func aptMirrorHost(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	files = append([]string{"/etc/apt/sources.list"}, files...)
	re := regexp.MustCompile(`(?m)^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)https?://([^/\s:]+)`)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if m := re.FindSubmatch(data); m != nil {
			return string(m[1])
		}
	}
	t.Fatal("no http(s) apt source on this machine to name an outside host")
	return ""
}
