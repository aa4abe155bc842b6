package podsuite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/shared/client"
)

// child is a process the suite started and stops.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
	log  string
}

func startChild(bin string, args []string, logPath string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	defer f.Close() // the child holds its own descriptor
	c := &child{cmd: exec.Command(bin, args...), done: make(chan struct{}), log: logPath}
	c.cmd.Stdout, c.cmd.Stderr = f, f
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and kills after grace.
func (c *child) stop(grace time.Duration) error {
	if c.exited() {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal: %w", err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("did not stop within %s; killed", grace)
	}
}

// kubeletArgs runs the kubelet as its own node on loopback, with a bridge
// and state directory no other kubelet uses.
func (e *env) kubeletArgs(port int, pleg time.Duration) []string {
	return []string{
		"--node-name", e.node,
		"--node-ip", "127.0.0.1",
		"--kubeconfig", e.proc.NodeKubeconfig(e.node),
		"--root-dir", filepath.Join(e.cfg.Workdir, "kubelet-root"),
		"--redis-addr", e.cfg.RedisAddr,
		"--amqp-url", e.cfg.AMQPURL,
		"--address", "127.0.0.1",
		"--port", strconv.Itoa(port),
		"--pod-infra-container-image", e.cfg.Pause,
		"--cni-bin-dir", strings.Join(e.cfg.CNIDir, ","),
		"--cni-bridge", e.kubeletBridge,
		"--pleg-period", pleg.String(),
	}
}

// startKubelet runs the kubelet and waits until its node is Ready, which
// also means its pod network is configured.
func (e *env) startKubelet(ctx context.Context, pleg time.Duration) (*child, error) {
	ports, err := cluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.cfg.Workdir, fmt.Sprintf("kubelet-pleg-%s.log", pleg))
	k, err := startChild(e.kubeletBin, e.kubeletArgs(ports[0], pleg), logPath)
	if err != nil {
		return nil, err
	}
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](e.api)
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := nodes.Get(ctx, "", e.node, metav1.GetOptions{})
		if err == nil && nodeReady(n) {
			return k, nil
		}
		if k.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			_ = k.stop(10 * time.Second)
			return nil, fmt.Errorf("kubelet not ready (node %s; exited=%v %v):\n%s", e.node, k.exited(), k.err, tail(logPath, 20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// createNode registers the node with the pod CIDR chosen for the benchmark
// before the kubelet starts: the kubelet keeps an existing node's CIDR, and
// the apiserver's own choice could be a /24 that make up's cluster routes.
func (e *env) createNode(ctx context.Context) error {
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](e.api)
	n, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: e.node},
		Spec:       corev1.NodeSpec{PodCIDR: e.kubeletCIDR, PodCIDRs: []string{e.kubeletCIDR}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create node %s: %w", e.node, err)
	}
	if n.Spec.PodCIDR != e.kubeletCIDR {
		return fmt.Errorf("node %s got podCIDR %q, want %q: the apiserver did not keep the given CIDR", e.node, n.Spec.PodCIDR, e.kubeletCIDR)
	}
	return nil
}

// freeCIDRs picks two /24s of 10.244.200.0-10.244.254.0 that no interface
// of the machine uses, at a random start so concurrent runs rarely meet.
func freeCIDRs(seed int) ([2]string, error) {
	used := map[int]bool{}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return [2]string{}, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil && v4[0] == 10 && v4[1] == 244 {
				used[int(v4[2])] = true
			}
		}
	}
	var got []string
	for i := range 55 {
		third := 200 + (seed+i)%55
		if !used[third] {
			got = append(got, fmt.Sprintf("10.244.%d.0/24", third))
			if len(got) == 2 {
				return [2]string{got[0], got[1]}, nil
			}
		}
	}
	return [2]string{}, errors.New("no free /24 in 10.244.200.0-10.244.254.0")
}

// forgetNode removes what the kubelet keeps outside the work directory: its
// RabbitMQ queue and its Redis keys.
func (e *env) forgetNode(ctx context.Context) error {
	var errs []error
	if conn, err := amqp.Dial(e.cfg.AMQPURL); err != nil {
		errs = append(errs, fmt.Errorf("rabbitmq: %w", err))
	} else {
		if ch, err := conn.Channel(); err == nil {
			if _, err := ch.QueueDelete("kubelet."+e.node, false, false, false); err != nil {
				errs = append(errs, fmt.Errorf("delete queue: %w", err))
			}
		}
		_ = conn.Close()
	}
	rdb := redis.NewClient(&redis.Options{Addr: e.cfg.RedisAddr})
	defer rdb.Close()
	iter := rdb.Scan(ctx, 0, "minik8s:kubelet:"+e.node+":*", 100).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		errs = append(errs, fmt.Errorf("redis scan: %w", err))
	} else if len(keys) > 0 {
		if err := rdb.Del(ctx, keys...).Err(); err != nil {
			errs = append(errs, fmt.Errorf("redis del: %w", err))
		}
	}
	return errors.Join(errs...)
}

// deleteLink removes a bridge; an absent one is fine.
func deleteLink(ctx context.Context, name string) error {
	if err := exec.CommandContext(ctx, "ip", "link", "show", name).Run(); err != nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "ip", "link", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link delete %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
