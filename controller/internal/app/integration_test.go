package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/nodelifecycle"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/apiservertest"
	"minik8s.io/shared/bus/amqpbus/amqptest"
	"minik8s.io/shared/client"
)

const waitTimeout = 90 * time.Second

func waitUntil(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond(t.Context())
		if ok {
			return
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", waitTimeout, what, last)
}

func hasTaint(n *corev1.Node, effect corev1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == nodelifecycle.TaintUnreachable && t.Effect == effect {
			return true
		}
	}
	return false
}

func condition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// startAPIServer starts an apiserver publishing to a private vhost (the shared
// controller-manager queue belongs to the running cluster) and returns its home, the vhost's
// URL and an admin client.
func startAPIServer(t *testing.T) (home, amqpURL string, admin *client.Client) {
	t.Helper()
	amqptest.Require(t)
	amqpURL = amqptest.VHost(t)
	home = apiservertest.Start(t, amqpURL)
	ccfg, err := client.FromKubeconfig(filepath.Join(home, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if admin, err = client.New(ccfg); err != nil {
		t.Fatal(err)
	}
	return home, amqpURL, admin
}

// runControllerManager runs Run with cfg until stop is called, or the test ends. stop
// returns Run's error, the same on every call; a Run that does not return within 45 s of
// being stopped fails the test.
func runControllerManager(t *testing.T, cfg Config, log *slog.Logger) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, log) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(45 * time.Second):
				t.Errorf("controller-manager %s did not stop within 45s", cfg.Identity)
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// TestNodeLifecycle runs the controller-manager against a real apiserver and RabbitMQ, plays a
// kubelet by renewing a Lease by hand, and checks the whole cycle: unreachable, eviction,
// recovery, deletion.
func TestNodeLifecycle(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](admin)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	leases := client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](admin)

	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second,
		NodeMonitorGracePeriod: 3 * time.Second, PodEvictionTimeout: 5 * time.Second, NodeMonitorPeriod: time.Second,
		LeaderElect: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("controller-manager: %v", err)
		}
	})

	name := "nlc-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	renew := func(ctx context.Context) error {
		l, err := leases.Get(ctx, nodelifecycle.LeaseNamespace, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	}
	node, err := nodes.Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node: %v", err)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := nodes.UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("node status: %v", err)
	}
	holder, secs, now := name, int32(3), metav1.NewMicroTime(time.Now())
	if _, err := leases.Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: nodelifecycle.LeaseNamespace, Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &now},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create lease: %v", err)
	}
	newPod := func(podName string) *corev1.Pod {
		p, err := pods.Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: podName},
			Spec:       corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Image: "minik8s/pause:1.0"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			err := pods.Delete(context.Background(), "default", podName, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !errors.Is(err, apierror.ErrNotFound) {
				t.Logf("cleanup pod %s: %v", podName, err)
			}
		})
		return p
	}
	first := newPod(name + "-a")

	// No renewals from here: within the grace period the node is lost.
	waitUntil(t, "the node to be Ready=Unknown and tainted unreachable", func(ctx context.Context) (bool, error) {
		n, err := nodes.Get(ctx, "", name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := condition(n, corev1.NodeReady)
		return ready != nil && ready.Status == corev1.ConditionUnknown && ready.Reason == nodelifecycle.ReasonNodeStatusUnknown &&
			hasTaint(n, corev1.TaintEffectNoExecute) && hasTaint(n, corev1.TaintEffectNoSchedule), nil
	})
	waitUntil(t, "the pod to be Ready=False", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "default", first.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse {
				return true, nil
			}
		}
		return p.DeletionTimestamp != nil, nil // already evicted counts too
	})
	waitUntil(t, "the pod to be marked for deletion after its toleration", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "default", first.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil, nil
	})

	// The "kubelet" comes back: renewing keeps the node and removes the taints.
	renewCtx, stopRenewing := context.WithCancel(t.Context())
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		for renewCtx.Err() == nil {
			_ = renew(renewCtx)
			select {
			case <-renewCtx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	waitUntil(t, "the unreachable taints to be removed", func(ctx context.Context) (bool, error) {
		n, err := nodes.Get(ctx, "", name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !hasTaint(n, corev1.TaintEffectNoExecute) && !hasTaint(n, corev1.TaintEffectNoSchedule), nil
	})
	second := newPod(name + "-b")
	stopRenewing()
	<-renewDone

	// Deleting the Node deletes its pods at once, the terminating one too.
	if err := nodes.Delete(t.Context(), "", name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	for _, p := range []*corev1.Pod{first, second} {
		waitUntil(t, "pod "+p.Name+" of the deleted node to be gone", func(ctx context.Context) (bool, error) {
			_, err := pods.Get(ctx, "default", p.Name, metav1.GetOptions{})
			return errors.Is(err, apierror.ErrNotFound), err
		})
	}
	if err := leases.Delete(t.Context(), nodelifecycle.LeaseNamespace, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("cleanup lease: %v", err)
	}

	// The events users see in kubectl describe.
	events := client.MustFor[*corev1.Event, *corev1.EventList](admin)
	waitUntil(t, "the NodeNotReady and TaintManagerEviction events", func(ctx context.Context) (bool, error) {
		list, err := events.List(ctx, "", metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		seen := map[string]bool{}
		for _, e := range list.Items {
			switch {
			case e.Reason == nodelifecycle.EventNodeNotReady && e.InvolvedObject.Name == name:
				seen["node"] = e.Message == "Node "+name+" status is now: NodeNotReady"
			case e.Reason == nodelifecycle.EventTaintManagerEviction && e.InvolvedObject.Name == first.Name:
				seen["evict"] = e.Message == "Marking for deletion Pod default/"+first.Name
			}
		}
		return seen["node"] && seen["evict"], fmt.Errorf("seen %v", seen)
	})
}

// testWriter sends the controller-manager's log to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// watchWriter calls seen the first time a line holding want is written.
type watchWriter struct {
	w    io.Writer
	want string
	seen func()
}

func (w watchWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.seen()
	}
	return w.w.Write(p)
}

// TestOnlyTheLeaderConsumes runs two controller-managers with leader election: only the one
// holding the Lease consumes the shared queue (a standby consuming too would take half of
// the leader's changes), and the standby starts consuming when it takes over.
func TestOnlyTheLeaderConsumes(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	leases := client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](admin)
	// started is closed when a controller-manager logs that it starts its parts (the bus
	// consumer among them, were it not kept for the leader).
	var startedOnce sync.Once
	started := make(chan struct{})
	log := slog.New(slog.NewTextHandler(watchWriter{testWriter{t}, "msg=starting identity=cm-b", func() { startedOnce.Do(func() { close(started) }) }},
		&slog.HandlerOptions{Level: slog.LevelInfo}))
	start := func(identity string) (stop func()) {
		stopRun := runControllerManager(t, Config{
			Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
			AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: identity,
			NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
			LeaderElect: true, LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
			ShutdownTimeout: 20 * time.Second,
		}, log.With("identity", identity))
		return func() {
			if err := stopRun(); err != nil && !errors.Is(err, context.Canceled) {
				t.Logf("controller-manager %s: %v", identity, err)
			}
		}
	}
	holder := func(ctx context.Context) (string, error) {
		l, err := leases.Get(ctx, LeaseNamespace, LeaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return "", err
		}
		return *l.Spec.HolderIdentity, nil
	}
	consumers := func() (int, error) { return amqptest.Consumers(amqpURL, "controller-manager") }

	stopA := start("cm-a")
	waitUntil(t, "cm-a to lead and consume", func(ctx context.Context) (bool, error) {
		h, err := holder(ctx)
		if err != nil || h != "cm-a" {
			return false, err
		}
		n, err := consumers()
		return n == 1, err
	})
	start("cm-b")
	select {
	case <-started:
	case <-time.After(waitTimeout):
		t.Fatal("cm-b never logged that it starts")
	}
	// cm-b runs as a standby: for a few seconds, long enough for it to connect and consume
	// if it would, the leader must stay the only consumer.
	for range 8 {
		time.Sleep(500 * time.Millisecond)
		if n, err := consumers(); err != nil || n != 1 {
			t.Fatalf("the queue has %d consumers (%v) with one leader and one standby; want 1", n, err)
		}
	}
	stopA()
	waitUntil(t, "cm-b to take over and consume", func(ctx context.Context) (bool, error) {
		h, err := holder(ctx)
		if err != nil || h != "cm-b" {
			return false, err
		}
		n, err := consumers()
		return n == 1, err
	})
}
