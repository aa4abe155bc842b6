package pods

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	netfake "minik8s.io/kubelet/internal/network/fake"
	"minik8s.io/kubelet/internal/pods/spec"
	"minik8s.io/kubelet/internal/runtime"
	"minik8s.io/kubelet/internal/runtime/dockerruntime"
	"minik8s.io/shared/record"
	"minik8s.io/shared/workqueue/clock"
)

// testLabel marks containers of the Docker test so a cleanup finds leftovers of any run.
const testLabel = "minik8s.test"

// labeled adds the test label to every container it creates.
type labeled struct{ runtime.Runtime }

func (l labeled) Create(ctx context.Context, cfg runtime.ContainerConfig) (string, error) {
	labels := map[string]string{testLabel: "pods"}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	cfg.Labels = labels
	return l.Runtime.Create(ctx, cfg)
}

func removeTestContainers(ctx context.Context, rt runtime.Runtime) error {
	cs, err := rt.List(ctx, map[string]string{testLabel: "pods"})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := rt.Remove(ctx, c.ID); err != nil {
			return err
		}
	}
	return nil
}

// TestDockerPodLifecycle runs a pod on the real Docker engine (network faked): shared volume
// and UTS namespace, limits, restart of a killed container, adoption by a restarted manager,
// and a deletion that leaves nothing behind.
func TestDockerPodLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a Docker daemon; skipped under -short")
	}
	docker, err := dockerruntime.New("")
	if err != nil {
		t.Fatalf("docker client: %v", err)
	}
	t.Cleanup(func() { docker.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := docker.Version(ctx); err != nil {
		t.Fatalf("Docker is unreachable (%v): start dockerd or set DOCKER_HOST, or run with -short", err)
	}
	for _, img := range []string{spec.DefaultSandboxImage, "minik8s/busybox:1.0"} {
		if ok, err := docker.ImagePresent(ctx, img); err != nil || !ok {
			t.Fatalf("image %s missing (%v): run `make images`", img, err)
		}
	}
	rt := labeled{docker}
	if err := removeTestContainers(ctx, rt); err != nil {
		t.Fatalf("remove leftovers: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := removeTestContainers(ctx, rt); err != nil {
			t.Errorf("remove test containers: %v", err)
		}
	})

	net := netfake.New("10.244.7.0/24")
	status := &statusLog{writes: map[types.UID][]corev1.PodStatus{}}
	fin := &dockerFinalizer{}
	root := t.TempDir()
	start := func() (*Manager, func()) {
		m := New(Config{
			NodeName: "n1", HostIP: "127.0.0.1", RootDir: root, Runtime: rt, Network: net,
			ClusterDNS: []string{"169.254.20.10"}, ClusterDomain: "cluster.local",
			Status: status, Finalizer: fin, Recorder: record.NewFake(1000), Clock: clock.Real{},
			Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
			RelistPeriod: 200 * time.Millisecond, ResyncPeriod: 2 * time.Second,
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Start(ctx) }()
		return m, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Start: %v", err)
			}
		}
	}
	m, stop := start()
	defer func() { stop() }()

	uid := types.UID("itest-" + time.Now().Format("150405.000000"))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pair", Namespace: "default", UID: uid, ResourceVersion: "1"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Volumes:       []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{
				{
					Name: "writer", Image: "minik8s/busybox:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
					Command: []string{"sh", "-c", "echo hi from $POD_NAME > /data/f; exec sleep 3600"},
					Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
					VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/data"}},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
				},
				{
					Name: "reader", Image: "minik8s/busybox:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
					Command:      []string{"sh", "-c", "exec sleep 3600"},
					VolumeMounts: []corev1.VolumeMount{{Name: "shared", MountPath: "/data", ReadOnly: true}},
				},
			},
		},
	}
	m.Update(pod)
	m.MarkSynced()
	latest := func() corev1.PodStatus { st, _ := status.latest(uid); return st }
	waitReal(t, "pod running with both containers ready", func() bool {
		st := latest()
		return st.Phase == corev1.PodRunning && condition(st, corev1.PodReady) == corev1.ConditionTrue
	})

	find := func(name string) runtime.Container {
		cs, err := docker.List(t.Context(), map[string]string{spec.LabelPodUID: string(uid), spec.LabelContainerName: name})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.State == runtime.StateRunning {
				d, err := docker.Inspect(t.Context(), c.ID)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
		}
		return runtime.Container{}
	}
	writer, reader := find("writer"), find("reader")
	if writer.Resources.CPUQuota != 50000 || writer.Resources.CPUPeriod != 100000 || writer.Resources.MemoryLimit != 64<<20 {
		t.Errorf("writer resources in docker inspect = %+v, want quota 50000/100000 and 64Mi", writer.Resources)
	}
	waitReal(t, "reader sees the writer's file", func() bool {
		res, err := docker.Exec(t.Context(), reader.ID, []string{"cat", "/data/f"})
		return err == nil && strings.TrimSpace(string(res.Output)) == "hi from pair"
	})
	if res, err := docker.Exec(t.Context(), reader.ID, []string{"hostname"}); err != nil || strings.TrimSpace(string(res.Output)) != "pair" {
		t.Errorf("hostname in reader = %q, %v; want the pod name from the shared UTS namespace", res.Output, err)
	}
	// Docker leaves the kubelet's resolv.conf in place of its own, also in a container that
	// joins the sandbox's network namespace.
	wantResolv := "search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver 169.254.20.10\noptions ndots:5\n"
	if res, err := docker.Exec(t.Context(), reader.ID, []string{"cat", "/etc/resolv.conf"}); err != nil || string(res.Output) != wantResolv {
		t.Errorf("/etc/resolv.conf in reader = %q, %v; want %q", res.Output, err, wantResolv)
	}

	// A killed container comes back.
	if err := docker.Stop(t.Context(), writer.ID, 0); err != nil {
		t.Fatal(err)
	}
	waitReal(t, "writer restarted", func() bool {
		cs := containerStatus(latest(), "writer")
		return cs.RestartCount == 1 && cs.State.Running != nil
	})
	if lt := containerStatus(latest(), "writer").LastTerminationState.Terminated; lt == nil || lt.ExitCode != 137 {
		t.Errorf("writer lastState = %+v, want terminated with 137", lt)
	}

	// A restarted manager adopts everything without restarting it.
	before := map[string]string{"writer": find("writer").ID, "reader": find("reader").ID, "POD": find("POD").ID}
	stop()
	m, stop = start()
	adopted := pod.DeepCopy()
	adopted.Status = latest()
	m.Update(adopted)
	m.MarkSynced()
	time.Sleep(2 * time.Second) // several relists and a resync: time for a wrong restart to show
	for name, id := range before {
		if got := find(name).ID; got != id {
			t.Errorf("%s after the manager restart = %.12s, want the adopted %.12s", name, got, id)
		}
	}

	// Deletion stops and removes everything, then finalizes.
	del := adopted.DeepCopy()
	now, grace := metav1.Now(), int64(1)
	del.DeletionTimestamp, del.DeletionGracePeriodSeconds = &now, &grace
	m.Update(del)
	waitReal(t, "finalized", func() bool { return fin.count() == 1 })
	cs, err := docker.List(t.Context(), map[string]string{spec.LabelPodUID: string(uid)})
	if err != nil || len(cs) != 0 {
		t.Errorf("containers left after deletion: %d (%v)", len(cs), err)
	}
	if got := net.Attached(); len(got) != 0 {
		t.Errorf("addresses still attached after deletion: %v", got)
	}
}

type dockerFinalizer struct {
	mu sync.Mutex
	n  int
}

func (f *dockerFinalizer) Finalize(context.Context, *corev1.Pod) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return nil
}

func (f *dockerFinalizer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func waitReal(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 60s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
