package netsuite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	docker "github.com/docker/docker/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/apierror"
	mclient "minik8s.io/shared/client"
	"minik8s.io/shared/kubeconfig"
)

// Labels the kubelet puts on its containers (kubelet/internal/pods/spec, internal to the
// kubelet module).
const (
	labelPodName      = "minik8s.io/pod-name"
	labelPodNamespace = "minik8s.io/pod-namespace"
	labelSandbox      = "minik8s.io/sandbox"
)

// Names of what a run creates in its namespace.
const (
	fileserverPod  = "fileserver"
	clientPod      = "client"
	serviceName    = "files"
	appLabel       = "netbench-fileserver"
	fileserverPort = 8080 // the workload images' default $PORT
	servicePort    = 80
	smallPath      = "/netbench/small"
	largePath      = "/netbench/large"
)

// env is the run's view of the cluster.
type env struct {
	cfg    Config
	log    *slog.Logger
	ns     string
	node   string
	api    *mclient.Client
	pods   *mclient.Typed[*corev1.Pod, *corev1.PodList]
	svcs   *mclient.Typed[*corev1.Service, *corev1.ServiceList]
	nss    *mclient.Typed[*corev1.Namespace, *corev1.NamespaceList]
	docker *docker.Client
}

// needCluster wraps what stops the suite before it starts.
func needCluster(err error) error {
	return fmt.Errorf("the network suite measures the cluster of make up, which must be running: %w", err)
}

// connect checks what the suite needs from this machine and the cluster, in the order a
// reader would fix them, and fills e's clients and node.
func (e *env) connect(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("the network suite needs root: it enters a pod's network namespace with nsenter")
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return fmt.Errorf("nsenter (util-linux): %w", err)
	}
	path := e.cfg.Kubeconfig
	if path == "" {
		path = kubeconfig.DefaultPath()
	}
	ccfg, err := mclient.FromKubeconfig(path)
	if err != nil {
		return needCluster(err)
	}
	ccfg.Timeout = e.cfg.OpTimeout
	if e.api, err = mclient.New(ccfg); err != nil {
		return needCluster(err)
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := e.api.ServerVersion(vctx); err != nil {
		return needCluster(fmt.Errorf("apiserver %s (kubeconfig %s): %w", e.api.Server(), path, err))
	}
	if err := kubeproxyHealthy(ctx, e.cfg.KubeproxyHealthz); err != nil {
		return needCluster(err)
	}
	e.pods = mclient.MustFor[*corev1.Pod, *corev1.PodList](e.api)
	e.svcs = mclient.MustFor[*corev1.Service, *corev1.ServiceList](e.api)
	e.nss = mclient.MustFor[*corev1.Namespace, *corev1.NamespaceList](e.api)
	if e.node, err = e.pickNode(ctx); err != nil {
		return err
	}
	if e.docker, err = docker.NewClientWithOpts(docker.FromEnv, docker.WithAPIVersionNegotiation()); err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	for _, img := range []string{e.cfg.FileserverImage, e.cfg.ClientImage} {
		if _, _, err := e.docker.ImageInspectWithRaw(ctx, img); err != nil {
			return fmt.Errorf("image %s (make images builds it): %w", img, err)
		}
	}
	return nil
}

func kubeproxyHealthy(ctx context.Context, url string) error {
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("kubeproxy health %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("kubeproxy health %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("kubeproxy health %s: %s", url, resp.Status)
	}
	return nil
}

// pickNode is the configured node, or the cluster's only one.
func (e *env) pickNode(ctx context.Context) (string, error) {
	nodes, err := mclient.MustFor[*corev1.Node, *corev1.NodeList](e.api).List(ctx, "", metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	var names []string
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	switch {
	case e.cfg.Node != "":
		for _, n := range names {
			if n == e.cfg.Node {
				return n, nil
			}
		}
		return "", fmt.Errorf("node %s: not in the cluster (nodes: %s)", e.cfg.Node, strings.Join(names, ", "))
	case len(names) == 1:
		return names[0], nil
	case len(names) == 0:
		return "", needCluster(errors.New("the cluster has no node (is the kubelet running?)"))
	}
	return "", fmt.Errorf("the cluster has nodes %s: name this machine's with -net-node", strings.Join(names, ", "))
}

// create makes the namespace, the two pods and the Service.
func (e *env) create(ctx context.Context) error {
	if _, err := e.nss.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", e.ns, err)
	}
	grace := int64(1)
	pod := func(name, image string, labels map[string]string, c corev1.Container) *corev1.Pod {
		c.Name, c.Image, c.ImagePullPolicy = name, image, corev1.PullIfNotPresent
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: labels},
			Spec: corev1.PodSpec{
				NodeName:                      e.node,
				TerminationGracePeriodSeconds: &grace,
				Containers:                    []corev1.Container{c},
			},
		}
	}
	for _, p := range []*corev1.Pod{
		pod(fileserverPod, e.cfg.FileserverImage, map[string]string{"app": appLabel}, corev1.Container{
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: fileserverPort, Protocol: corev1.ProtocolTCP}},
		}),
		pod(clientPod, e.cfg.ClientImage, map[string]string{"app": "netbench-client"}, corev1.Container{
			Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1 & wait; done"},
		}),
	} {
		if _, err := e.pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", e.ns, p.Name, err)
		}
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: serviceName, Namespace: e.ns},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": appLabel},
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: servicePort, TargetPort: intstr.FromInt32(fileserverPort),
			}},
		},
	}
	if _, err := e.svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s/%s: %w", e.ns, serviceName, err)
	}
	return nil
}

// deleteNamespace deletes the run's namespace and waits a while for it to go, so that its
// pods are torn down before the next run; what the wait does not see is only logged.
func (e *env) deleteNamespace(ctx context.Context) error {
	if err := e.nss.Delete(ctx, "", e.ns, metav1.DeleteOptions{}); err != nil {
		if errors.Is(err, apierror.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("delete namespace %s: %w", e.ns, err)
	}
	err := poll(ctx, time.Second, func() (bool, error) {
		_, err := e.nss.Get(ctx, "", e.ns, metav1.GetOptions{})
		if errors.Is(err, apierror.ErrNotFound) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		e.log.Warn("namespace still terminating", "namespace", e.ns, "err", err)
	}
	return nil
}

// waitRunning waits for a pod to run with its container ready and returns its IP.
func (e *env) waitRunning(ctx context.Context, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	var last *corev1.Pod
	err := poll(ctx, 250*time.Millisecond, func() (bool, error) {
		p, err := e.pods.Get(ctx, e.ns, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // the apiserver may be busy; the deadline decides
		}
		last = p
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, fmt.Errorf("pod %s/%s ended: %s %s", e.ns, name, p.Status.Phase, p.Status.Message)
		}
		return podRunning(p), nil
	})
	if err != nil {
		state := "not created"
		if last != nil {
			state = fmt.Sprintf("phase %s, %d container statuses", last.Status.Phase, len(last.Status.ContainerStatuses))
		}
		return "", fmt.Errorf("pod %s/%s running (%s): %w", e.ns, name, state, err)
	}
	return last.Status.PodIP, nil
}

// podRunning is phase Running with an IP and every container ready.
func podRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.DeletionTimestamp != nil {
		return false
	}
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if !s.Ready || s.State.Running == nil {
			return false
		}
	}
	return true
}

// waitListening waits until addr accepts a TCP connection.
func (e *env) waitListening(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	var d net.Dialer
	var last error
	err := poll(ctx, 100*time.Millisecond, func() (bool, error) {
		var c net.Conn
		c, last = d.DialContext(ctx, "tcp", addr)
		if last != nil {
			return false, nil
		}
		return true, c.Close()
	})
	if err != nil {
		return fmt.Errorf("the fileserver at %s listening: %w (last: %v)", addr, err, last)
	}
	return nil
}

// putFiles writes the two files to the fileserver, straight to its pod IP.
func (e *env) putFiles(ctx context.Context, podAddr string) error {
	seed := [32]byte{}
	_, _ = rand.Read(seed[:])
	for _, f := range []struct {
		path string
		size int64
	}{{smallPath, e.cfg.SmallBytes}, {largePath, e.cfg.LargeBytes}} {
		// Random bytes, so that nothing on the way can compress them.
		body := io.LimitReader(mrand.NewChaCha8(seed), f.size)
		pctx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
		req, err := http.NewRequestWithContext(pctx, http.MethodPut, "http://"+podAddr+f.path, body)
		if err != nil {
			cancel()
			return err
		}
		req.ContentLength = f.size
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			return fmt.Errorf("PUT %s to the fileserver at %s: %w", f.path, podAddr, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
			return fmt.Errorf("PUT %s to the fileserver at %s: %s: %s", f.path, podAddr, resp.Status, strings.TrimSpace(string(msg)))
		}
	}
	return nil
}

// waitServing waits until a GET of the small file through addr succeeds: for the
// ClusterIP, until kubeproxy has programmed the Service.
func (e *env) waitServing(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	g := newGetter(5 * time.Second)
	var last error
	err := poll(ctx, 250*time.Millisecond, func() (bool, error) {
		_, last = g.get(ctx, addr, smallPath, e.cfg.SmallBytes)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("GET %s through %s: %w (last: %v)", smallPath, addr, err, last)
	}
	return nil
}

// waitDNS waits until the cluster DNS answers t.
func (e *env) waitDNS(ctx context.Context, t dnsTarget) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	var last error
	err := poll(ctx, 250*time.Millisecond, func() (bool, error) {
		_, last = query(ctx, newDNSClient(2*time.Second), t)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("cluster DNS: %w (last: %v)", err, last)
	}
	return nil
}

// sandboxPID is the host PID of the pod's sandbox (pause) container, whose network namespace
// is the pod's.
func (e *env) sandboxPID(ctx context.Context, pod string) (int, error) {
	f := filters.NewArgs(
		filters.Arg("label", labelPodNamespace+"="+e.ns),
		filters.Arg("label", labelPodName+"="+pod),
		filters.Arg("label", labelSandbox+"=true"),
		filters.Arg("status", "running"),
	)
	cs, err := e.docker.ContainerList(ctx, container.ListOptions{Filters: f})
	if err != nil {
		return 0, fmt.Errorf("sandbox of pod %s/%s: %w", e.ns, pod, err)
	}
	if len(cs) != 1 {
		return 0, fmt.Errorf("sandbox of pod %s/%s: %d running in this machine's Docker, want 1 (is -net-node this machine's node?)", e.ns, pod, len(cs))
	}
	info, err := e.docker.ContainerInspect(ctx, cs[0].ID)
	if err != nil {
		return 0, fmt.Errorf("sandbox of pod %s/%s: %w", e.ns, pod, err)
	}
	if info.State == nil || info.State.Pid == 0 {
		return 0, fmt.Errorf("sandbox of pod %s/%s: no process", e.ns, pod)
	}
	return info.State.Pid, nil
}

// poll calls cond every interval until it is done, fails, or ctx ends.
func poll(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
