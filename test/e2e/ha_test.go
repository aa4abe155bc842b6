package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/client"
)

// etcdMember is one process of an external etcd cluster.
type etcdMember struct {
	name, clientURL string
	cmd             *exec.Cmd
	exited          chan struct{}
}

// startEtcdCluster runs an n-member etcd cluster of the system's etcd binary (Debian's
// etcd-server, which make up installs) on free ports, and stops it when the test ends.
func startEtcdCluster(t *testing.T, n int) []*etcdMember {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("the etcd binary is not installed (make up installs etcd-server): %v", err)
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("e%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	dir := t.TempDir()
	var members []*etcdMember
	for i := range n {
		m := &etcdMember{name: fmt.Sprintf("e%d", i), clientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), exited: make(chan struct{})}
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])
		logf, err := os.Create(filepath.Join(dir, m.name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		m.cmd = exec.Command(bin, "--name", m.name, "--data-dir", filepath.Join(dir, m.name),
			"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "e2e-"+strconv.Itoa(ports[0]))
		m.cmd.Stdout, m.cmd.Stderr = logf, logf
		m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := m.cmd.Start(); err != nil {
			t.Fatalf("start etcd %s: %v", m.name, err)
		}
		go func() { _ = m.cmd.Wait(); _ = logf.Close(); close(m.exited) }()
		members = append(members, m)
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.stop()
		}
	})
	cli := etcdClientFor(t, endpoints(members))
	defer cli.Close()
	eventually(t, 60*time.Second, "the etcd cluster serves", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, "/e2e/health", "ok")
		return err == nil
	})
	return members
}

func (m *etcdMember) stop() {
	select {
	case <-m.exited:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
	}
}

func endpoints(ms []*etcdMember) string {
	var out []string
	for _, m := range ms {
		out = append(out, m.clientURL)
	}
	return strings.Join(out, ",")
}

func etcdClientFor(t *testing.T, eps string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(eps, ","), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// clientFor is an API client for srv with the credentials of the shared home's kubeconfig.
func clientFor(t *testing.T, srv *apiserver) *client.Client {
	t.Helper()
	cfg, err := client.FromKubeconfig(srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server = fmt.Sprintf("https://127.0.0.1:%d", srv.port)
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// outboxLeader reads the minik8s_outbox_leader gauge of srv.
func outboxLeader(t *testing.T, srv *apiserver) bool {
	t.Helper()
	body, err := clientFor(t, srv).Get().AbsPath("/metrics").Do(t.Context())
	if err != nil {
		t.Fatalf("metrics of apiserver %s: %v", srv.name, err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "minik8s_outbox_leader "); ok {
			return strings.TrimSpace(v) == "1"
		}
	}
	t.Fatalf("apiserver %s exports no minik8s_outbox_leader", srv.name)
	return false
}

// TestHAOnExternalEtcd runs two apiservers on a three-member etcd cluster: both serve the
// same data, exactly one publishes to the bus, the other takes over when the publisher dies,
// and losing one etcd member loses nothing.
func TestHAOnExternalEtcd(t *testing.T) {
	requireIntegration(t)
	amqpURL := amqptest.VHost(t)
	members := startEtcdCluster(t, 3)
	home := t.TempDir()
	var servers []*apiserver
	for _, name := range []string{"a", "b"} {
		srv, err := newAPIServer(home)
		if err != nil {
			t.Fatal(err)
		}
		srv.name, srv.etcdServers, srv.amqpURL = name, endpoints(members), amqpURL
		// One after the other: the first start writes the shared certificates and tokens.
		if err := srv.start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.kill() })
		servers = append(servers, srv)
	}
	a, b := servers[0], servers[1]

	ns := fmt.Sprintf("e2e-ha-%08x", rand.Uint32())
	ours := func(resource, namespace, name string) bool {
		return namespace == ns || (resource == "namespaces" && name == ns)
	}
	rec := startRecorder(t, amqpURL, func(h map[string]string) bool {
		return ours(h[bus.HeaderResource], h[bus.HeaderNamespace], h[bus.HeaderName])
	})
	from := etcdRevision(t, a) + 1
	wa := newWriter(t, a, ns)
	wa.createNamespace()
	wa.churn("a", 5)

	// What one server wrote, the other serves.
	cmsB := client.For[*corev1.ConfigMap, *corev1.ConfigMapList](clientFor(t, b), lookup(t, "configmaps"))
	cm, err := cmsB.Get(t.Context(), ns, "a-4", metav1.GetOptions{})
	if err != nil || cm.Data["step"] != "updated" {
		t.Fatalf("apiserver b reading what a wrote: %v %v", cm, err)
	}

	// Exactly one publisher, and no change published twice.
	var leader, follower *apiserver
	eventually(t, 60*time.Second, "exactly one outbox leader", func() bool {
		la, lb := outboxLeader(t, a), outboxLeader(t, b)
		switch {
		case la && !lb:
			leader, follower = a, b
		case lb && !la:
			leader, follower = b, a
		default:
			return false
		}
		return true
	})
	checkBus(t, a, rec, from, ours)
	if d := repeats(rec); d != 0 {
		t.Errorf("%d changes were published more than once with two apiservers running", d)
	}

	// The publisher dies without a goodbye: the other takes over within the session TTL and
	// publishes every later change.
	if err := leader.kill(); err != nil {
		t.Fatal(err)
	}
	wf := &writer{t: t, ns: ns, cl: clientFor(t, follower)}
	wf.cms = client.For[*corev1.ConfigMap, *corev1.ConfigMapList](wf.cl, lookup(t, "configmaps"))
	wf.pods = client.For[*corev1.Pod, *corev1.PodList](wf.cl, lookup(t, "pods"))
	wf.churn("b", 5)
	eventually(t, 60*time.Second, "the surviving apiserver leads the outbox", func() bool { return outboxLeader(t, follower) })
	checkBus(t, follower, rec, from, ours)

	// One etcd member down: the cluster keeps its quorum and nothing is lost.
	members[0].stop()
	wf.churn("c", 5)
	checkBus(t, follower, rec, from, ours)
	if _, err := wf.cms.Get(t.Context(), ns, "c-4", metav1.GetOptions{}); err != nil {
		t.Fatalf("read after losing an etcd member: %v", err)
	}
}

// repeats counts messages delivered more than once.
func repeats(rec *recorder) int {
	msgs, _ := rec.snapshot()
	seen := map[string]bool{}
	n := 0
	for _, m := range msgs {
		if seen[m.id] {
			n++
		}
		seen[m.id] = true
	}
	return n
}
