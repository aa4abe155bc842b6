package hpasuite

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/stats"
	metricsv1beta1 "minik8s.io/shared/apis/metrics/v1beta1"
	mclient "minik8s.io/shared/client"
)

// Config says what to measure.
type Config struct {
	Kubeconfig string        // make up's cluster; default $KUBECONFIG, else $MINIK8S_HOME/kubeconfig
	Rounds     int           // load-to-scale measurements, each on a fresh Deployment
	Image      string        // the load workload
	Timeout    time.Duration // for each wait
	// SyncPeriod is the controller-manager's --horizontal-pod-autoscaler-sync-period, the
	// decision's baseline: the load starts just after the HPA's sync that measured the idle
	// pod, so the decision can come no sooner than the next one.
	SyncPeriod time.Duration
}

// Defaults are the flags' defaults.
var Defaults = Config{Rounds: 3, Image: "minik8s/load:1.0", Timeout: 3 * time.Minute, SyncPeriod: 15 * time.Second}

const (
	loadPort   = 8080 // the workload images' default $PORT
	cpuRequest = 100  // millicores each pod requests
	target     = 50   // percent of the request the HPA aims at
	poll       = 100 * time.Millisecond
)

// Round is one measurement, every time from the load's start but Direct.
type Round struct {
	Metrics  time.Duration // the metrics API shows the loaded pod above the HPA's target
	Decision time.Duration // the HPA set the Deployment's replicas to 2
	Ready    time.Duration // the new pod is Ready
	Direct   time.Duration // baseline: a direct scale to 2 until the new pod is Ready
}

// Report is the rounds of a run.
type Report struct {
	Rounds     []Round
	SyncPeriod time.Duration
}

type env struct {
	cfg     Config
	log     *slog.Logger
	api     *mclient.Client
	ns      string
	deploys *mclient.Typed[*appsv1.Deployment, *appsv1.DeploymentList]
	pods    *mclient.Typed[*corev1.Pod, *corev1.PodList]
	hpas    *mclient.Typed[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList]
	http    *http.Client
}

// Run measures cfg.Rounds rounds in a namespace of its own, which it deletes at the end.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Report, error) {
	mu, cleanup, err := cluster.ConnectMakeUp(ctx, cfg.Kubeconfig, "hpa", "hpabench", log)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	api := mu.API
	e := &env{cfg: cfg, log: log, api: api, ns: mu.Namespace,
		deploys: mclient.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](api),
		pods:    mclient.MustFor[*corev1.Pod, *corev1.PodList](api),
		hpas:    mclient.MustFor[*autoscalingv2.HorizontalPodAutoscaler, *autoscalingv2.HorizontalPodAutoscalerList](api),
		http:    &http.Client{Timeout: 5 * time.Second}}
	rep := &Report{SyncPeriod: cfg.SyncPeriod}
	for i := range cfg.Rounds {
		r, err := e.round(ctx, fmt.Sprintf("load-%d", i))
		if err != nil {
			return rep, fmt.Errorf("round %d: %w", i+1, err)
		}
		log.Info("round", "n", i+1, "metrics", r.Metrics, "decision", r.Decision, "ready", r.Ready, "direct", r.Direct)
		rep.Rounds = append(rep.Rounds, r)
	}
	return rep, nil
}

func (e *env) deployment(name string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "load", Image: e.cfg.Image,
					ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intOrPort(loadPort)}}},
					Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuRequest, resource.DecimalSI)}}}}},
			},
		},
	}
}

func (e *env) hpa(name string) *autoscalingv2.HorizontalPodAutoscaler {
	one, pct := int32(1), int32(target)
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    &one, MaxReplicas: 2,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &pct}}}},
		},
	}
}

// round runs one Deployment through a direct scale (the baseline), then CPU load under an HPA.
func (e *env) round(ctx context.Context, name string) (Round, error) {
	var r Round
	if _, err := e.deploys.Create(ctx, e.deployment(name), metav1.CreateOptions{}); err != nil {
		return r, err
	}
	first, err := e.waitReady(ctx, name, 1)
	if err != nil {
		return r, err
	}
	// Baseline: the same Deployment scaled to 2 directly, until the new pod is Ready.
	start := time.Now()
	if err := e.setReplicas(ctx, name, 2); err != nil {
		return r, err
	}
	if _, err := e.waitReady(ctx, name, 2); err != nil {
		return r, err
	}
	r.Direct = time.Since(start)
	if err := e.setReplicas(ctx, name, 1); err != nil {
		return r, err
	}
	if err := e.until(ctx, "one pod left", func() (bool, error) {
		l, err := e.pods.List(ctx, e.ns, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 1 && l.Items[0].Name == first[0].Name, nil
	}); err != nil {
		return r, err
	}

	// The HPA measures the idle pod first, so the metrics pipeline is warm as in a cluster
	// that has been running.
	if _, err := e.hpas.Create(ctx, e.hpa(name), metav1.CreateOptions{}); err != nil {
		return r, err
	}
	if err := e.until(ctx, "the HPA measuring the idle pod", func() (bool, error) {
		h, err := e.hpas.Get(ctx, e.ns, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		m := h.Status.CurrentMetrics
		return len(m) == 1 && m[0].Resource != nil && m[0].Resource.Current.AverageUtilization != nil, nil
	}); err != nil {
		return r, err
	}

	url := "http://" + net.JoinHostPort(first[0].Status.PodIP, strconv.Itoa(loadPort))
	start = time.Now()
	if err := e.get(ctx, url+"/cpu/start?workers=1"); err != nil {
		return r, err
	}
	defer func() { _ = e.get(context.WithoutCancel(ctx), url+"/cpu/stop") }()
	err = e.until(ctx, "the load seen, scaled and Ready", func() (bool, error) {
		now := time.Since(start)
		if r.Metrics == 0 {
			var pm metricsv1beta1.PodMetrics
			err := e.api.Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces/"+e.ns+"/pods/"+first[0].Name).Into(ctx, &pm)
			if err == nil && len(pm.Containers) > 0 && pm.Containers[0].Usage.Cpu().MilliValue()*100 > target*cpuRequest {
				r.Metrics = now
			}
		}
		if r.Decision == 0 {
			d, err := e.deploys.Get(ctx, e.ns, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if *d.Spec.Replicas >= 2 {
				r.Decision = now
			}
		}
		if r.Decision != 0 && r.Ready == 0 {
			ready, err := e.readyPods(ctx, name)
			if err != nil {
				return false, err
			}
			if len(ready) >= 2 {
				r.Ready = now
			}
		}
		return r.Metrics != 0 && r.Ready != 0, nil
	})
	if err != nil {
		return r, err
	}
	if err := e.hpas.Delete(ctx, e.ns, name, metav1.DeleteOptions{}); err != nil {
		return r, err
	}
	return r, e.deploys.Delete(ctx, e.ns, name, metav1.DeleteOptions{})
}

func (e *env) setReplicas(ctx context.Context, name string, n int) error {
	_, err := e.deploys.Patch(ctx, e.ns, name, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)))
	return err
}

func (e *env) get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := e.http.Do(req)
	if err != nil {
		return fmt.Errorf("load pod: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("load pod %s: %s", url, resp.Status)
	}
	return nil
}

func (e *env) readyPods(ctx context.Context, name string) ([]corev1.Pod, error) {
	l, err := e.pods.List(ctx, e.ns, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out, nil
}

func (e *env) waitReady(ctx context.Context, name string, n int) ([]corev1.Pod, error) {
	var ready []corev1.Pod
	err := e.until(ctx, fmt.Sprintf("%d Ready pods of %s", n, name), func() (bool, error) {
		var err error
		ready, err = e.readyPods(ctx, name)
		return len(ready) >= n, err
	})
	return ready, err
}

// until polls cond every poll until it holds, fails, or cfg.Timeout passes.
func (e *env) until(ctx context.Context, what string, cond func() (bool, error)) error {
	return cluster.Until(ctx, e.cfg.Timeout, poll, what, cond)
}

// Print writes the report as Markdown.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "| round | load → metrics above target | load → scale decision | decision / sync period (%s) | load → new pod Ready | decision → Ready | baseline: direct scale → Ready | (decision → Ready) / baseline |\n", r.SyncPeriod)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var metrics, decision, ready, direct []time.Duration
	for i, x := range r.Rounds {
		fmt.Fprintf(w, "| %d | %s | %s | %.2fx | %s | %s | %s | %.2fx |\n", i+1, stats.Millis(x.Metrics), stats.Millis(x.Decision), float64(x.Decision)/float64(r.SyncPeriod), stats.Millis(x.Ready),
			stats.Millis(x.Ready-x.Decision), stats.Millis(x.Direct), float64(x.Ready-x.Decision)/float64(x.Direct))
		metrics, decision, ready, direct = append(metrics, x.Metrics), append(decision, x.Decision), append(ready, x.Ready), append(direct, x.Direct)
	}
	if len(r.Rounds) == 0 {
		return
	}
	m, d := stats.Summarize(metrics).P50, stats.Summarize(decision).P50
	fmt.Fprintf(w, "\nMedians: metrics above target %s, decision %s (%.2fx the sync period), new pod Ready %s; direct scale %s.\n",
		stats.Millis(m), stats.Millis(d), float64(d)/float64(r.SyncPeriod), stats.Millis(stats.Summarize(ready).P50), stats.Millis(stats.Summarize(direct).P50))
}

func intOrPort(p int) intstr.IntOrString { return intstr.FromInt32(int32(p)) }
