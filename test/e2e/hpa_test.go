package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// replicaChange is a change of a Deployment's spec.replicas and when the test saw it.
type replicaChange struct {
	at       time.Time
	from, to int32
}

// TestHorizontalPodAutoscaler scales a Deployment of load pods on a one-node cluster made by
// the scripts: the real kubectl's autoscale (autoscaling/v1) makes the HPA, an autoscaling/v2
// manifest applied with the real kubectl gives it a scale-up policy of one pod per 15 s and a
// short scale-down window; CPU load on one pod scales the Deployment up to max, never faster
// than the policy, and back down to min once the load stops.
func TestHorizontalPodAutoscaler(t *testing.T) {
	const (
		minReplicas, maxReplicas = 1, 3
		upPeriod                 = 15 * time.Second
	)
	c := startNetCluster(t, "h")
	c.startControlPlane(t, nil, []string{"--horizontal-pod-autoscaler-sync-period", "3s"})
	node := c.byShort["h"]
	deploys := client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c.cl)
	hpas := client.MustFor[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](c.cl)
	dir := t.TempDir()
	apply := func(t *testing.T, name, body string) {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c.kubectlReal.ok(t, "-n", c.ns, "apply", "-f", path)
	}
	waitDeploy := func(t *testing.T, what string, cond func(*appsv1.Deployment) bool) *appsv1.Deployment {
		t.Helper()
		return pollUntil(t, "deployment load", what, func() (*appsv1.Deployment, error) {
			return deploys.Get(t.Context(), c.ns, "load", metav1.GetOptions{})
		}, cond, nil, c.kubeletTails)
	}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	// Every change of the Deployment's replicas, as the test sees them.
	var mu sync.Mutex
	var changes []replicaChange
	watchDone := make(chan struct{})
	stopWatch := make(chan struct{})
	go func() {
		defer close(watchDone)
		last := int32(-1)
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-tk.C:
			}
			d, err := deploys.Get(t.Context(), c.ns, "load", metav1.GetOptions{})
			if err != nil || d.Spec.Replicas == nil {
				continue
			}
			if n := *d.Spec.Replicas; n != last {
				mu.Lock()
				if last >= 0 {
					changes = append(changes, replicaChange{at: time.Now(), from: last, to: n})
				}
				mu.Unlock()
				last = n
			}
		}
	}()
	t.Cleanup(func() { close(stopWatch); <-watchDone })
	seen := func() []replicaChange {
		mu.Lock()
		defer mu.Unlock()
		return append([]replicaChange(nil), changes...)
	}

	// waitSeen waits until the last change the test saw went to n.
	waitSeen := func(t *testing.T, n int32) []replicaChange {
		t.Helper()
		return pollUntil(t, "deployment load", fmt.Sprintf("scaled to %d", n), func() ([]replicaChange, error) { return seen(), nil },
			func(got []replicaChange) bool { return len(got) > 0 && got[len(got)-1].to == n }, nil, c.kubeletTails)
	}

	var loaded *corev1.Pod
	step("a Deployment of load pods with a CPU request runs one pod", func(t *testing.T) {
		apply(t, "load", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: load
spec:
  replicas: 1
  selector:
    matchLabels:
      app: load
  template:
    metadata:
      labels:
        app: load
    spec:
      containers:
      - name: load
        image: minik8s/load:1.0
        resources:
          requests:
            cpu: 100m
`)
		waitDeploy(t, "with one available pod", func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == 1 })
		pods, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: "app=load"})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
			t.Fatalf("load pods: %v %+v", err, pods)
		}
		loaded = &pods.Items[0]
	})

	step("the real kubectl's autoscale makes the HPA and both kubectls show it alike", func(t *testing.T) {
		c.kubectlReal.ok(t, "-n", c.ns, "autoscale", "deployment/load", "--cpu-percent=50",
			fmt.Sprintf("--min=%d", minReplicas), fmt.Sprintf("--max=%d", maxReplicas))
		h, err := hpas.Get(t.Context(), c.ns, "load", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
			*h.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 || h.Spec.MaxReplicas != maxReplicas {
			t.Fatalf("autoscaling/v2 view of the HPA: %+v", h.Spec)
		}
		age := regexp.MustCompile(`\s+\S+\s*$`)
		rows := map[string]string{}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "-n", c.ns, "get", "hpa", "load", "--no-headers").stdout
			rows[k.name] = age.ReplaceAllString(strings.TrimSpace(out), "")
			if !strings.Contains(rows[k.name], "Deployment/load") || !strings.Contains(rows[k.name], "/50%") {
				t.Fatalf("%s kubectl get hpa: %q", k.name, out)
			}
		}
		if strings.Join(strings.Fields(rows["real"]), " ") != strings.Join(strings.Fields(rows["ours"]), " ") {
			t.Fatalf("the kubectls differ:\nreal %q\nours %q", rows["real"], rows["ours"])
		}
		v1 := c.kubectlReal.ok(t, "-n", c.ns, "get", "horizontalpodautoscalers.v1.autoscaling", "load", "-o", "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage}").stdout
		if v1 != "autoscaling/v1 50" {
			t.Fatalf("autoscaling/v1 view: %q", v1)
		}
	})

	step("an autoscaling/v2 manifest with a behavior applies over it", func(t *testing.T) {
		apply(t, "hpa", fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: load
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: load
  minReplicas: %d
  maxReplicas: %d
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 50
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies:
      - type: Pods
        value: 1
        periodSeconds: %d
    scaleDown:
      stabilizationWindowSeconds: 5
      policies:
      - type: Percent
        value: 100
        periodSeconds: 15
`, minReplicas, maxReplicas, int(upPeriod.Seconds())))
		h, err := hpas.Get(t.Context(), c.ns, "load", metav1.GetOptions{})
		if err != nil || h.Spec.Behavior == nil || h.Spec.Behavior.ScaleUp == nil || len(h.Spec.Behavior.ScaleUp.Policies) != 1 {
			t.Fatalf("behavior not applied: %v %+v", err, h)
		}
		// The HPA measures the idle pod and keeps it alone.
		pollUntil(t, "hpa load", "measuring the pods' CPU", func() (*autoscalingv2.HorizontalPodAutoscaler, error) {
			return hpas.Get(t.Context(), c.ns, "load", metav1.GetOptions{})
		}, func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			m := h.Status.CurrentMetrics
			return len(m) == 1 && m[0].Resource != nil && m[0].Resource.Current.AverageUtilization != nil
		}, nil, c.kubeletTails)
		if got := seen(); len(got) != 0 {
			t.Fatalf("replicas changed without load: %+v", got)
		}
	})

	url := "http://" + loaded.Status.PodIP + ":8080"
	step("CPU load on one pod scales up to max, one pod per period at most", func(t *testing.T) {
		node.exec(t, "curl", "-sSf", "-m", "5", url+"/cpu/start?workers=1")
		ups := waitSeen(t, maxReplicas)
		if len(ups) != maxReplicas-minReplicas {
			t.Fatalf("scale-ups %+v, want %d steps of one pod", ups, maxReplicas-minReplicas)
		}
		for i, ch := range ups {
			if ch.to != ch.from+1 {
				t.Fatalf("step %d went from %d to %d: more than the policy's one pod", i, ch.from, ch.to)
			}
			// The test sees each change within its 100 ms poll (and an API round trip): a
			// second's allowance, so only a policy broken by more than that fails.
			if i > 0 && ch.at.Sub(ups[i-1].at) < upPeriod-time.Second {
				t.Fatalf("step %d came %s after the one before, under the policy's %s", i, ch.at.Sub(ups[i-1].at), upPeriod)
			}
			t.Logf("replicas %d -> %d at +%s", ch.from, ch.to, ch.at.Sub(ups[0].at).Round(100*time.Millisecond))
		}
		ev := pollUntil(t, "events of hpa load", "listing its rescales", func() (*corev1.EventList, error) {
			return c.events.List(t.Context(), c.ns, metav1.ListOptions{FieldSelector: "involvedObject.name=load,involvedObject.kind=HorizontalPodAutoscaler"})
		}, func(l *corev1.EventList) bool {
			n := 0
			for _, e := range l.Items {
				if e.Reason == "SuccessfulRescale" {
					n += int(max(e.Count, 1))
				}
			}
			return n >= maxReplicas-minReplicas
		}, nil, c.kubeletTails)
		t.Logf("%d events", len(ev.Items))
		// Stays at max while loaded: never above it.
		waitDeploy(t, "with every pod available", func(d *appsv1.Deployment) bool { return d.Status.AvailableReplicas == maxReplicas })
	})

	step("without load it scales back down to min", func(t *testing.T) {
		node.exec(t, "curl", "-sSf", "-m", "5", url+"/cpu/stop")
		waitSeen(t, minReplicas)
		for _, ch := range seen() {
			if ch.to > maxReplicas || ch.to < minReplicas {
				t.Fatalf("replicas went to %d, outside %d..%d: %+v", ch.to, minReplicas, maxReplicas, seen())
			}
		}
		c.kubectl.ok(t, "-n", c.ns, "describe", "hpa", "load")
	})
}
