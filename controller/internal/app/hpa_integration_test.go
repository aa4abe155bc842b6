package app

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// fakeKubelet serves /stats/summary for the running pods of a namespace, each container
// burning load millicores: the metrics source of the apiserver under test scrapes it as it
// would a kubelet.
type fakeKubelet struct {
	pods *client.Typed[*corev1.Pod, *corev1.PodList]
	ns   string
	load atomic.Int64 // millicores per pod
	mu   sync.Mutex
	cum  map[string]float64 // pod uid -> CPU nanoseconds so far
	last map[string]time.Time
}

func (k *fakeKubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	list, err := k.pods.List(r.Context(), k.ns, metav1.ListOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	now := time.Now()
	type ctr struct {
		Name   string         `json:"name"`
		CPU    map[string]any `json:"cpu"`
		Memory map[string]any `json:"memory"`
	}
	type pod struct {
		PodRef     map[string]string `json:"podRef"`
		Containers []ctr             `json:"containers"`
	}
	var out struct {
		Pods []pod `json:"pods"`
	}
	for _, p := range list.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		uid := string(p.UID)
		if last, ok := k.last[uid]; ok {
			k.cum[uid] += float64(k.load.Load()) * 1e6 * now.Sub(last).Seconds()
		}
		k.last[uid] = now
		out.Pods = append(out.Pods, pod{PodRef: map[string]string{"name": p.Name, "namespace": p.Namespace, "uid": uid},
			Containers: []ctr{{Name: "c", CPU: map[string]any{"time": now, "usageCoreNanoSeconds": uint64(k.cum[uid])},
				Memory: map[string]any{"time": now, "workingSetBytes": 16 << 20}}}})
	}
	_ = json.NewEncoder(w).Encode(out)
}

// TestHorizontalPodAutoscaler runs the HPA and ReplicaSet controllers against a real
// apiserver and RabbitMQ; a fake kubelet, registered as a node, is the apiserver's metrics
// source, and the test plays the kubelet's pod status. Under load the ReplicaSet goes to
// maxReplicas with a SuccessfulRescale event and the status kubectl shows; without load it
// goes back to minReplicas.
func TestHorizontalPodAutoscaler(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	rss := client.MustFor[*appsv1.ReplicaSet, *appsv1.ReplicaSetList](admin)
	hpas := client.MustFor[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](admin)
	nodes := client.MustFor[*corev1.Node, *corev1.NodeList](admin)
	events := client.MustFor[*corev1.Event, *corev1.EventList](admin)
	const ns = "default"

	kubelet := &fakeKubelet{pods: pods, ns: ns, cum: map[string]float64{}, last: map[string]time.Time{}}
	kubelet.load.Store(200)
	srv := httptest.NewUnstartedServer(kubelet)
	srv.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "hpa-node"}}
	node, err := nodes.Create(t.Context(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(p)
	if _, err := nodes.UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-hpa",
		Controllers:            []string{"replicaset", "horizontalpodautoscaling"},
		HPASyncPeriod:          time.Second,
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})

	// Play the kubelet: every pod of the ReplicaSet runs and is ready as soon as it exists.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			list, _ := pods.List(ctx, ns, metav1.ListOptions{LabelSelector: "app=hpa-web"})
			if list != nil {
				for _, p := range list.Items {
					if p.Status.Phase == corev1.PodRunning || p.DeletionTimestamp != nil {
						continue
					}
					now := metav1.Now()
					p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &now
					p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
					_, _ = pods.UpdateStatus(ctx, &p, metav1.UpdateOptions{})
				}
			}
			time.Sleep(300 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	one := int32(1)
	_, err = rss.Create(t.Context(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hpa-web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "hpa-web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "hpa-web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/load:1.0",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fifty, zero := int32(50), int32(0)
	_, err = hpas.Create(t.Context(), &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hpa-web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "hpa-web"},
			MinReplicas:    &one, MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &fifty}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &zero}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	replicas := func(ctx context.Context) int32 {
		rs, err := rss.Get(ctx, ns, "hpa-web", metav1.GetOptions{})
		if err != nil || rs.Spec.Replicas == nil {
			return -1
		}
		return *rs.Spec.Replicas
	}
	t.Run("scales up to max under load", func(t *testing.T) {
		waitUntil(t, "the ReplicaSet at 4 replicas", func(ctx context.Context) (bool, error) { return replicas(ctx) == 4, nil })
		// Once every pod has samples, 200% of request wants 8 pods: limited by maxReplicas.
		var hpa *autoscalingv2.HorizontalPodAutoscaler
		waitUntil(t, "the HPA's status at 4 replicas, 200% of request, limited by max", func(ctx context.Context) (bool, error) {
			hpa, err = hpas.Get(ctx, ns, "hpa-web", metav1.GetOptions{})
			if err != nil || hpa.Status.CurrentReplicas != 4 || len(hpa.Status.CurrentMetrics) != 1 {
				return false, err
			}
			u := hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization
			return u != nil && *u >= 180 && *u <= 220 && conditionIs(hpa, autoscalingv2.ScalingLimited, "True/TooManyReplicas"), nil
		})
		if hpa.Status.LastScaleTime == nil || hpa.Status.DesiredReplicas != 4 {
			t.Errorf("status: %+v", hpa.Status)
		}
		if !conditionIs(hpa, autoscalingv2.AbleToScale, "True/") || !conditionIs(hpa, autoscalingv2.ScalingActive, "True/ValidMetricFound") {
			t.Errorf("conditions: %+v", hpa.Status.Conditions)
		}
		waitUntil(t, "a SuccessfulRescale event", func(ctx context.Context) (bool, error) {
			list, err := events.List(ctx, ns, metav1.ListOptions{FieldSelector: "involvedObject.name=hpa-web,involvedObject.kind=HorizontalPodAutoscaler"})
			if err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Reason == "SuccessfulRescale" && e.Message == "New size: 4; reason: cpu resource utilization (percentage of request) above target" {
					return true, nil
				}
			}
			return false, nil
		})
		var table metav1.Table
		if err := admin.Get().Resource(hpas.Resource(), ns, "hpa-web").Accept("application/json;as=Table;v=v1;g=meta.k8s.io").Into(t.Context(), &table); err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 1 || !regexp.MustCompile(`^cpu: \d+%/50%$`).MatchString(table.Rows[0].Cells[2].(string)) {
			t.Errorf("TARGETS: %+v", table.Rows)
		}
	})
	t.Run("scales down to min without load", func(t *testing.T) {
		kubelet.load.Store(5)
		waitUntil(t, "the ReplicaSet back at 1 replica", func(ctx context.Context) (bool, error) { return replicas(ctx) == 1, nil })
		waitUntil(t, "an event for the scale-down", func(ctx context.Context) (bool, error) {
			list, err := events.List(ctx, ns, metav1.ListOptions{FieldSelector: "involvedObject.name=hpa-web"})
			if err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Reason == "SuccessfulRescale" && e.Message == "New size: 1; reason: All metrics below target" {
					return true, nil
				}
			}
			return false, nil
		})
	})
}

// conditionIs reports whether hpa's condition of type typ reads as want ("Status/Reason"; a
// prefix).
func conditionIs(hpa *autoscalingv2.HorizontalPodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType, want string) bool {
	for _, c := range hpa.Status.Conditions {
		if c.Type == typ {
			return strings.HasPrefix(string(c.Status)+"/"+c.Reason, want)
		}
	}
	return false
}
