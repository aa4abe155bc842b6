package nodestatus_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// requireAPIServer connects with the kubeconfig of a running control plane:
// $MINIK8S_KUBECONFIG, else $MINIK8S_HOME/kubeconfig, else ~/.minik8s/kubeconfig. It skips
// under -short and fails clearly when the apiserver does not answer.
func requireAPIServer(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a running apiserver (make up); skipped under -short")
	}
	path := os.Getenv("MINIK8S_KUBECONFIG")
	if path == "" {
		home := os.Getenv("MINIK8S_HOME")
		if home == "" {
			h, _ := os.UserHomeDir()
			home = filepath.Join(h, ".minik8s")
		}
		path = filepath.Join(home, "kubeconfig")
	}
	cfg, err := client.FromKubeconfig(path)
	if err != nil {
		t.Fatalf("no kubeconfig for the apiserver at %s (%v): run make up, set MINIK8S_KUBECONFIG, or run with -short to skip", path, err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client from %s: %v", path, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := client.MustFor[*corev1.Node, *corev1.NodeList](c).List(ctx, "", metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("apiserver %s unreachable (%v): run make up, or run with -short to skip", cfg.Server, err)
	}
	return c
}

func TestIntegrationAgainstAPIServer(t *testing.T) {
	c := requireAPIServer(t)
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](c)
	leases := client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](c)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "nodestatus-it-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := nodes.Delete(ctx, "", name, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("delete test node %s: %v", name, err)
		}
		if err := leases.Delete(ctx, nodestatus.NodeLeaseNamespace, name, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("delete test lease %s: %v", name, err)
		}
	})

	var mu sync.Mutex
	var notReady error
	newAgent := func() *nodestatus.Agent {
		a, err := nodestatus.New(nodestatus.Config{
			Name: name, Roles: []string{"worker"}, ContainerRuntimeVersion: "docker://20.10.24",
			LeaseRenewInterval: time.Second, StatusUpdateInterval: time.Second,
			Readiness: func(context.Context) error { mu.Lock(); defer mu.Unlock(); return notReady },
		}, nodestatus.ClientAPI(c), clock.Real{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return a
	}

	a := newAgent()
	if err := a.Register(t.Context()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	cidr, err := netip.ParsePrefix(a.PodCIDR())
	if err != nil || cidr.Bits() != 24 || !netip.MustParsePrefix("10.244.0.0/16").Contains(cidr.Addr()) {
		t.Fatalf("PodCIDR() = %q (%v), want a /24 of 10.244.0.0/16", a.PodCIDR(), err)
	}
	n, err := nodes.Get(t.Context(), "", name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	if n.Labels["node-role.kubernetes.io/worker"] != "" || n.Labels["kubernetes.io/hostname"] != name {
		t.Errorf("labels = %v, want the role and hostname labels", n.Labels)
	}
	if n.Status.Capacity.Cpu().IsZero() || n.Status.Capacity.Memory().IsZero() || n.Status.NodeInfo.KubeletVersion != nodestatus.KubeletVersion {
		t.Errorf("status lacks capacity or node info: %+v", n.Status)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start = %v", err)
		}
	}()

	var first time.Time
	waitReal(t, "the lease to be created", func() bool {
		l, err := leases.Get(t.Context(), nodestatus.NodeLeaseNamespace, name, metav1.GetOptions{})
		if err != nil || l.Spec.RenewTime == nil {
			return false
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != n.UID {
			t.Fatalf("lease owner = %v, want node uid %s", l.OwnerReferences, n.UID)
		}
		first = l.Spec.RenewTime.Time
		return true
	})
	waitReal(t, "the lease to be renewed", func() bool {
		l, err := leases.Get(t.Context(), nodestatus.NodeLeaseNamespace, name, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.After(first)
	})

	mu.Lock()
	notReady = errors.New("network plugin not ready")
	mu.Unlock()
	waitReal(t, "Ready to turn False", func() bool {
		n, err := nodes.Get(t.Context(), "", name, metav1.GetOptions{})
		return err == nil && condition(n, corev1.NodeReady).Status == corev1.ConditionFalse &&
			condition(n, corev1.NodeReady).Message == "network plugin not ready"
	})

	// A restarted kubelet finds its node and keeps the pod CIDR.
	again := newAgent()
	if err := again.Register(t.Context()); err != nil {
		t.Fatalf("second Register: %v", err)
	}
	if again.PodCIDR() != a.PodCIDR() {
		t.Errorf("pod CIDR after re-registration = %q, want %q", again.PodCIDR(), a.PodCIDR())
	}
}

func waitReal(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestIntegrationUsageAnnotations runs the usage reporter against the apiserver: the
// annotations appear on the Node through a merge patch that leaves the rest alone.
func TestIntegrationUsageAnnotations(t *testing.T) {
	c := requireAPIServer(t)
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](c)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "nodeusage-it-" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := nodes.Delete(ctx, "", name, metav1.DeleteOptions{}); err != nil && !errors.Is(err, apierror.ErrNotFound) {
			t.Errorf("delete test node %s: %v", name, err)
		}
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	agent, err := nodestatus.New(nodestatus.Config{Name: name, ContainerRuntimeVersion: "docker://20.10.24"}, nodestatus.ClientAPI(c), clock.Real{}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := agent.Register(t.Context()); err != nil {
		t.Fatalf("Register: %v", err)
	}

	src := &fakeContainers{ctrs: map[string]*fakeContainer{}}
	src.set("a", 300, 200<<20)
	r, err := nodestatus.NewUsageReporter(nodestatus.UsageConfig{Node: name, Period: 100 * time.Millisecond}, src, nodes, clock.Real{}, log)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	src.advance(0, start) // the runtime's own timestamps set the rate, not when Sync ran
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("first Sync: %v", err)
	}
	src.advance(2*time.Second, start.Add(2*time.Second))
	if err := r.Sync(t.Context()); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	last, ok := r.Last()
	if !ok {
		t.Fatal("the second sample wrote no usage")
	}
	n, err := nodes.Get(t.Context(), "", name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node: %v", err)
	}
	want := map[string]string{scheme.AnnotationUsageCPU: "300m", scheme.AnnotationUsageMemory: "200Mi",
		scheme.AnnotationUsageTime: last.Time.UTC().Format(time.RFC3339)}
	for k, v := range want {
		if n.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q (all: %v)", k, n.Annotations[k], v, n.Annotations)
		}
	}
	if n.Labels["kubernetes.io/hostname"] != name || n.Spec.PodCIDR != agent.PodCIDR() || n.Status.Capacity.Cpu().IsZero() {
		t.Errorf("the patch disturbed the node: labels %v, podCIDR %q, capacity %v", n.Labels, n.Spec.PodCIDR, n.Status.Capacity)
	}
}
