package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/ingress"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// TestIngress runs the Ingress controller against a real apiserver and RabbitMQ: the nginx
// Service and pods appear with the first Ingress, the rendered configuration is recorded,
// the Ingress's status names the Service's ClusterIP, a missing Service is a Warning event
// and a 503 until it exists, the controller's IngressClass is made and another controller's
// class is left alone, and a deleted nginx pod is replaced. No kubelet runs, so nothing
// is delivered to the pods: the delivery itself is tested against real nginx in
// internal/ingress.
func TestIngress(t *testing.T) {
	home, amqpURL, admin := startAPIServer(t)
	svcs := client.MustFor[*corev1.Service, *corev1.ServiceList](admin)
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](admin)
	ings := client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](admin)
	cms := client.MustFor[*corev1.ConfigMap, *corev1.ConfigMapList](admin)
	events := client.MustFor[*corev1.Event, *corev1.EventList](admin)
	const ns, nginxNS = "default", "minik8s-ingress"

	stop := runControllerManager(t, Config{
		Kubeconfig: filepath.Join(home, "kubeconfigs", "controller-manager.kubeconfig"),
		AMQPURL:    amqpURL, RelistPeriod: 30 * time.Second, Identity: "cm-ingress",
		Controllers:            []string{"endpoint", "endpointslice", "ingress"},
		IngressNginxReplicas:   2,
		NodeMonitorGracePeriod: 40 * time.Second, PodEvictionTimeout: time.Minute, NodeMonitorPeriod: time.Second,
		ShutdownTimeout: 20 * time.Second,
	}, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() {
		if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("controller-manager: %v", err)
		}
	})

	newService := func(name string) *corev1.Service {
		t.Helper()
		s, err := svcs.Create(t.Context(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create service %s: %v", name, err)
		}
		return s
	}
	web := newService("web")
	prefix, exact := networkingv1.PathTypePrefix, networkingv1.PathTypeExact
	backend := func(svc string) networkingv1.IngressBackend {
		return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}
	}
	if _, err := ings.Create(t.Context(), &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
				{Path: "/", PathType: &prefix, Backend: backend("web")},
				{Path: "/cart", PathType: &exact, Backend: backend("cart")},
			}}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The nginx Service appears, and its ClusterIP becomes the Ingress's address.
	var nginxIP string
	waitUntil(t, "the ingress-nginx Service", func(ctx context.Context) (bool, error) {
		s, err := svcs.Get(ctx, nginxNS, ingress.DefaultService, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		nginxIP = s.Spec.ClusterIP
		return nginxIP != "" && s.Spec.Type == corev1.ServiceTypeNodePort && s.Spec.Ports[0].NodePort != 0, nil
	})
	waitUntil(t, "the Ingress's status to name "+nginxIP, func(ctx context.Context) (bool, error) {
		ing, err := ings.Get(ctx, ns, "shop", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		lb := ing.Status.LoadBalancer.Ingress
		return len(lb) == 1 && lb[0].IP == nginxIP, fmt.Errorf("status %+v", lb)
	})
	// kubectl get ingress shows hosts and address.
	res, err := scheme.Lookup("ingresses")
	if err != nil {
		t.Fatal(err)
	}
	table, err := admin.ListTable(t.Context(), res, ns, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if row := fmt.Sprint(table.Rows[0].Cells); !strings.Contains(row, "shop.example") || !strings.Contains(row, nginxIP) {
		t.Errorf("kubectl get ingress row %s, want the host and %s", row, nginxIP)
	}

	// The rendered configuration: the host, the Service's ClusterIP, and 503 for the path
	// whose Service is missing, which is a Warning event on the Ingress.
	conf := func(ctx context.Context) (string, error) {
		cm, err := cms.Get(ctx, nginxNS, ingress.DefaultService, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return cm.Data[ingress.ConfigMapKey], nil
	}
	waitUntil(t, "the configuration to proxy to web and answer 503 for /cart", func(ctx context.Context) (bool, error) {
		c, err := conf(ctx)
		return strings.Contains(c, "server_name shop.example;") && strings.Contains(c, "proxy_pass http://"+web.Spec.ClusterIP+":80;") &&
			strings.Contains(c, `location = "/cart" {`) && strings.Contains(c, "return 503;"), err
	})
	waitUntil(t, "a ServiceNotFound Warning event on the Ingress", func(ctx context.Context) (bool, error) {
		list, err := events.List(ctx, ns, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Ingress" && e.InvolvedObject.Name == "shop" && e.Type == corev1.EventTypeWarning &&
				e.Reason == ingress.ReasonServiceNotFound && strings.Contains(e.Message, `"cart"`) {
				return true, nil
			}
		}
		return false, nil
	})

	// The missing Service appears: its path proxies to it.
	cart := newService("cart")
	waitUntil(t, "the configuration to proxy /cart to the new Service", func(ctx context.Context) (bool, error) {
		c, err := conf(ctx)
		return strings.Contains(c, "proxy_pass http://"+cart.Spec.ClusterIP+":80;") && !strings.Contains(c, "return 503;"), err
	})

	// The controller made its IngressClass, the default one; an Ingress of another
	// controller's class stays out of the configuration and gets no address, while one of ours
	// made after it is served.
	classes := client.MustFor[*networkingv1.IngressClass, *networkingv1.IngressClassList](admin)
	ours, err := classes.Get(t.Context(), "", ingress.DefaultClass, metav1.GetOptions{})
	if err != nil || ours.Spec.Controller != ingress.ControllerName || !ingress.IsDefault(ours) {
		t.Fatalf("the controller's IngressClass: %+v (%v)", ours, err)
	}
	if _, err := classes.Create(t.Context(), &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "other"},
		Spec: networkingv1.IngressClassSpec{Controller: "example.com/other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hostIngress := func(name, host string, class *string) {
		t.Helper()
		if _, err := ings.Create(t.Context(), &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: networkingv1.IngressSpec{IngressClassName: class, Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: backend("web")}}}}}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	otherClass := "other"
	hostIngress("elsewhere", "elsewhere.example", &otherClass)
	hostIngress("second", "second.example", nil)
	waitUntil(t, "the configuration to serve second.example", func(ctx context.Context) (bool, error) {
		c, err := conf(ctx)
		return strings.Contains(c, "server_name second.example;"), err
	})
	if c, _ := conf(t.Context()); strings.Contains(c, "elsewhere.example") {
		t.Errorf("the other class's Ingress is in the configuration:\n%s", c)
	}
	second, err := ings.Get(t.Context(), ns, "second", metav1.GetOptions{})
	if err != nil || second.Spec.IngressClassName == nil || *second.Spec.IngressClassName != ingress.DefaultClass {
		t.Errorf("an Ingress naming no class was not given the default class: %v (%v)", second.Spec.IngressClassName, err)
	}
	if elsewhere, err := ings.Get(t.Context(), ns, "elsewhere", metav1.GetOptions{}); err != nil || len(elsewhere.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("the other class's Ingress got an address: %+v (%v)", elsewhere.Status, err)
	}
	for _, name := range []string{"elsewhere", "second"} {
		if err := ings.Delete(t.Context(), ns, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Two nginx pods; one deleted is replaced.
	nginxPods := func(ctx context.Context) ([]string, error) {
		list, err := pods.List(ctx, nginxNS, metav1.ListOptions{LabelSelector: ingress.LabelManagedBy + "=" + ingress.ManagedBy})
		if err != nil {
			return nil, err
		}
		var names []string
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		return names, nil
	}
	var first []string
	waitUntil(t, "two nginx pods", func(ctx context.Context) (bool, error) {
		var err error
		first, err = nginxPods(ctx)
		return len(first) == 2, fmt.Errorf("pods %v (%v)", first, err)
	})
	if first[0] == first[1] || !strings.HasPrefix(first[0], ingress.DefaultService+"-") {
		t.Errorf("nginx pods %v", first)
	}
	p, err := pods.Get(t.Context(), nginxNS, first[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Spec.Containers[0]; c.Image != ingress.DefaultImage || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
		t.Errorf("nginx container %+v, want image %s with an HTTP readiness probe", c, ingress.DefaultImage)
	}
	if err := pods.Delete(t.Context(), nginxNS, first[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the deleted nginx pod to be replaced", func(ctx context.Context) (bool, error) {
		now, err := nginxPods(ctx)
		return len(now) == 2 && !slices.Contains(now, first[0]) && slices.Contains(now, first[1]), fmt.Errorf("pods %v (%v)", now, err)
	})
	// And stays at two: the controller's own creations are not counted twice.
	time.Sleep(2 * time.Second)
	if now, err := nginxPods(t.Context()); err != nil || len(now) != 2 {
		t.Errorf("nginx pods %v (%v), want 2", now, err)
	}

	// Without Ingresses no nginx runs; the Service stays, and so does its address.
	if err := ings.Delete(t.Context(), ns, "shop", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the nginx pods to go with the last Ingress", func(ctx context.Context) (bool, error) {
		now, err := nginxPods(ctx)
		return len(now) == 0, fmt.Errorf("pods %v (%v)", now, err)
	})
	if s, err := svcs.Get(t.Context(), nginxNS, ingress.DefaultService, metav1.GetOptions{}); err != nil || s.Spec.ClusterIP != nginxIP {
		t.Errorf("the ingress-nginx Service after the last Ingress: %v, want it kept with %s", err, nginxIP)
	}
}
