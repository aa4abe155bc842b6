package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// endpointsView is what a test compares of a Service's Endpoints and EndpointSlices: the
// ready and not-ready addresses with their ports, as "ip:port" strings, sorted.
type endpointsView struct {
	Ready, NotReady []string
}

func endpointsOf(ep *corev1.Endpoints) endpointsView {
	var v endpointsView
	for _, s := range ep.Subsets {
		for _, p := range s.Ports {
			for _, a := range s.Addresses {
				v.Ready = append(v.Ready, fmt.Sprintf("%s:%d/%s", a.IP, p.Port, p.Name))
			}
			for _, a := range s.NotReadyAddresses {
				v.NotReady = append(v.NotReady, fmt.Sprintf("%s:%d/%s", a.IP, p.Port, p.Name))
			}
		}
	}
	slices.Sort(v.Ready)
	slices.Sort(v.NotReady)
	return v
}

func slicesOf(list []discoveryv1.EndpointSlice) endpointsView {
	var v endpointsView
	for _, s := range list {
		for _, p := range s.Ports {
			for _, e := range s.Endpoints {
				a := fmt.Sprintf("%s:%d/%s", e.Addresses[0], *p.Port, *p.Name)
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					v.Ready = append(v.Ready, a)
				} else {
					v.NotReady = append(v.NotReady, a)
				}
			}
		}
	}
	slices.Sort(v.Ready)
	slices.Sort(v.NotReady)
	return v
}

// TestEndpointsAndSlices runs the Endpoints and EndpointSlice controllers against a real
// apiserver and RabbitMQ and plays the kubelet by writing pod status by hand.
func TestEndpointsAndSlices(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	svcs := client.MustFor[*corev1.Service, *corev1.ServiceList](admin)
	eps := client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](admin)
	eslices := client.MustFor[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](admin)
	const ns = "default"

	metricsAddr := freeAddress(t)
	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-endpoints",
		Controllers:            []string{"endpoint", "endpointslice"},
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second, MetricsAddress: metricsAddr,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})

	newService := func(name, app string) *corev1.Service {
		t.Helper()
		s, err := svcs.Create(t.Context(), &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app}, Ports: []corev1.ServicePort{
				{Name: "http", Port: 80, TargetPort: intstr.FromString("web")},
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create service %s: %v", name, err)
		}
		return s
	}
	// newPod creates a pod of app whose "web" port is port and gives it ip and readiness,
	// as its kubelet would report them.
	newPod := func(name, app, ip string, port int32, ready bool) {
		t.Helper()
		p, err := pods.Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0",
				Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: port}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}
		setReady(p, ready)
		if _, err := pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod %s status: %v", name, err)
		}
	}
	setPodReady := func(name string, ready bool) {
		t.Helper()
		p, err := pods.Get(t.Context(), ns, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		setReady(p, ready)
		if _, err := pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("pod %s status: %v", name, err)
		}
	}
	// expect waits until the Service's Endpoints and EndpointSlices both show want.
	expect := func(svc string, want endpointsView) {
		t.Helper()
		start := time.Now()
		var last string
		waitUntil(t, fmt.Sprintf("endpoints of %s to be %+v", svc, want), func(ctx context.Context) (bool, error) {
			ep, err := eps.Get(ctx, ns, svc, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			list, err := eslices.List(ctx, ns, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
			if err != nil {
				return false, err
			}
			d1, d2 := cmp.Diff(want, endpointsOf(ep)), cmp.Diff(want, slicesOf(list.Items))
			last = d1 + d2
			return d1 == "" && d2 == "", fmt.Errorf("endpoints (-want +got):\n%s\nslices (-want +got):\n%s", d1, d2)
		})
		t.Logf("endpoints of %s as wanted after %s (%s)", svc, time.Since(start).Round(time.Millisecond), last)
	}

	// Service first, then its pods.
	web := newService("web", "web")
	newPod("web-a", "web", "10.244.0.10", 8080, true)
	newPod("web-b", "web", "10.244.0.11", 8081, false)
	newPod("other", "db", "10.244.0.12", 8080, true)
	expect("web", endpointsView{Ready: []string{"10.244.0.10:8080/http"}, NotReady: []string{"10.244.0.11:8081/http"}})

	// The slices carry what kubeproxy and clients rely on.
	list, err := eslices.List(t.Context(), ns, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" || s.AddressType != discoveryv1.AddressTypeIPv4 ||
			len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != web.UID || s.GenerateName != "web-" {
			t.Errorf("slice %s: labels %v, address type %s, owners %v, generateName %q", s.Name, s.Labels, s.AddressType, s.OwnerReferences, s.GenerateName)
		}
	}

	// Readiness both ways.
	setPodReady("web-b", true)
	expect("web", endpointsView{Ready: []string{"10.244.0.10:8080/http", "10.244.0.11:8081/http"}})
	setPodReady("web-a", false)
	expect("web", endpointsView{Ready: []string{"10.244.0.11:8081/http"}, NotReady: []string{"10.244.0.10:8080/http"}})

	// A deleted pod leaves.
	zero := int64(0)
	if err := pods.Delete(t.Context(), ns, "web-b", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	expect("web", endpointsView{NotReady: []string{"10.244.0.10:8080/http"}})

	// Pods first, then their Service.
	newPod("api-a", "api", "10.244.0.20", 9000, true)
	newService("api", "api")
	expect("api", endpointsView{Ready: []string{"10.244.0.20:9000/http"}})

	// A Service without a selector is left alone: no Endpoints, no slices.
	if _, err := svcs.Create(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Deleting a Service deletes its Endpoints and slices.
	if err := svcs.Delete(t.Context(), ns, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the Endpoints and EndpointSlices of the deleted Service to go", func(ctx context.Context) (bool, error) {
		_, err := eps.Get(ctx, ns, "web", metav1.GetOptions{})
		if !errors.Is(err, apierror.ErrNotFound) {
			return false, err
		}
		list, err := eslices.List(ctx, ns, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, fmt.Errorf("%d slices left", len(list.Items))
	})
	if _, err := eps.Get(t.Context(), ns, "manual", metav1.GetOptions{}); !errors.Is(err, apierror.ErrNotFound) {
		t.Errorf("Endpoints of the Service without selector: %v, want NotFound", err)
	}
	if l, err := eslices.List(t.Context(), ns, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=manual"}); err != nil || len(l.Items) != 0 {
		t.Errorf("EndpointSlices of the Service without selector: %d (%v), want none", len(l.Items), err)
	}

	t.Run("metrics", func(t *testing.T) {
		// What the work above must have left in /metrics: both controllers reconciled
		// Services through their queues, their informers listed and took bus messages.
		atLeastOne := []string{
			`minik8s_controller_sync_duration_seconds_count{controller="endpoint",result="success"}`,
			`minik8s_controller_sync_duration_seconds_count{controller="endpointslice",result="success"}`,
			`minik8s_workqueue_adds_total{name="endpoint"}`,
			`minik8s_workqueue_adds_total{name="endpointslice"}`,
			`minik8s_workqueue_work_duration_seconds_count{name="endpointslice"}`,
			`minik8s_informer_lists_total{resource="pods",result="success"}`,
			`minik8s_informer_lists_total{resource="services",result="success"}`,
			`minik8s_informer_bus_events_total{resource="pods",result="applied"}`,
			`minik8s_informer_bus_events_total{resource="services",result="applied"}`,
			`minik8s_bus_connects_total`,
		}
		var got map[string]float64
		waitUntil(t, "the controllers' metrics", func(ctx context.Context) (bool, error) {
			var err error
			if got, err = scrape(ctx, "http://"+metricsAddr+"/metrics"); err != nil {
				return false, err
			}
			for _, series := range atLeastOne {
				if got[series] < 1 {
					return false, fmt.Errorf("%s = %g, want at least 1", series, got[series])
				}
			}
			return true, nil
		})
		if _, ok := got[`minik8s_workqueue_depth{name="endpoint"}`]; !ok {
			t.Error("no queue depth of the endpoint controller")
		}
		if n := got[`minik8s_controller_sync_errors_total{controller="endpoint"}`]; n != got[`minik8s_controller_sync_duration_seconds_count{controller="endpoint",result="error"}`] {
			t.Errorf("endpoint errors %g, but %g failed syncs", n, got[`minik8s_controller_sync_duration_seconds_count{controller="endpoint",result="error"}`])
		}
	})
}

// freeAddress returns a 127.0.0.1 address whose port was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape reads a Prometheus text page into its series, named as the page prints them
// (name{label="value",...}), and their values.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line %q has no value", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, nil
}

func setReady(p *corev1.Pod, ready bool) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = status
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()})
}
