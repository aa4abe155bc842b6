package ingress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/informer"
	"minik8s.io/shared/record"
)

func listOf(objs ...runtime.Object) informer.ListerWatcher {
	return informer.ListWatchFuncs{
		ListFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			list := &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for _, o := range objs {
				list.Items = append(list.Items, runtime.RawExtension{Object: o.DeepCopyObject()})
			}
			return list, nil
		},
		WatchFunc: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
			return nil, errors.New("no watch in this test")
		},
	}
}

// fakeAPI records writes; annotations are fed back into the pods informer, as the bus would.
type fakeAPI struct {
	mu    sync.Mutex
	calls []string
	pods  *informer.Informer
	rv    int
}

func (f *fakeAPI) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeAPI) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeAPI) EnsureNamespace(context.Context, string) error { return nil }
func (f *fakeAPI) CreateService(context.Context, *corev1.Service) error {
	return nil
}
func (f *fakeAPI) CreatePod(_ context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	f.record("create pod")
	out := p.DeepCopy()
	out.Name = p.GenerateName + "new"
	return out, nil
}
func (f *fakeAPI) DeletePod(_ context.Context, p *corev1.Pod) error {
	f.record("delete pod %s", p.Name)
	return nil
}
func (f *fakeAPI) AnnotatePod(_ context.Context, p *corev1.Pod, k, v string) error {
	f.record("annotate %s %s", p.Name, v)
	out := p.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[k] = v
	f.mu.Lock()
	f.rv++
	out.ResourceVersion = fmt.Sprint(100 + f.rv)
	f.mu.Unlock()
	_, err := f.pods.Apply(watch.Modified, out)
	return err
}
func (f *fakeAPI) UpdateIngressStatus(_ context.Context, ing *networkingv1.Ingress) (*networkingv1.Ingress, error) {
	f.record("status %s %s", ing.Name, ing.Status.LoadBalancer.Ingress[0].IP)
	out := ing.DeepCopy()
	out.ResourceVersion = "50"
	return out, nil
}
func (f *fakeAPI) RecordConfig(_ context.Context, _, _ string, conf []byte) error {
	f.record("record %s", Hash(conf))
	return nil
}

type fakeDeliverer struct {
	mu    sync.Mutex
	got   map[string][]byte
	fails map[string]bool
}

func (d *fakeDeliverer) Deliver(_ context.Context, p *corev1.Pod, container string, conf []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if container != Container {
		return fmt.Errorf("container %q", container)
	}
	if d.fails[p.Name] {
		return errors.New("nginx -t refused it")
	}
	d.got[p.Name] = conf
	return nil
}

func (d *fakeDeliverer) Got(name string) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.got[name]
}

// TestControllerDeliversAndReports runs the controller over fixed caches: the running nginx pod
// gets the rendered configuration and is annotated with it, the one whose delivery fails is
// retried and not annotated, the Ingress's status gets the Service's ClusterIP, and a missing
// Service is a Warning event.
func TestControllerDeliversAndReports(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	exact := networkingv1.PathTypeExact
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "shop", ResourceVersion: "3"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "shop.example", IngressRuleValue: networkingv1.IngressRuleValue{
			HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{
				{Path: "/", PathType: &exact, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "gone", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
			}}}}}}}
	nginxSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: DefaultService, ResourceVersion: "4"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.99"}}
	labelled := func(p *corev1.Pod) {
		p.Namespace, p.ResourceVersion = DefaultNamespace, "5"
		p.Labels = map[string]string{LabelName: DefaultService, LabelManagedBy: ManagedBy}
	}
	good, bad := nginxPod("good", labelled), nginxPod("bad", labelled)
	mk := func(name string, objs ...runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: listOf(objs...), NoWatch: true, RelistPeriod: time.Hour})
	}
	ings, svcs, pods := mk("ingresses", ing), mk("services", nginxSvc), mk("pods", good, bad)
	api := &fakeAPI{pods: pods}
	del := &fakeDeliverer{got: map[string][]byte{}, fails: map[string]bool{"bad": true}}
	rec := record.NewFake(100)
	c := New(Config{Ingresses: ings, Services: svcs, Pods: pods, API: api, Deliverer: del, Recorder: rec, Replicas: 2})
	var wg sync.WaitGroup
	for _, r := range []interface{ Start(context.Context) error }{ings, svcs, pods, c} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	deadline := time.Now().Add(30 * time.Second)
	for del.Got("good") == nil || !slices.ContainsFunc(api.Calls(), func(s string) bool { return strings.HasPrefix(s, "annotate good ") }) {
		if time.Now().After(deadline) {
			t.Fatalf("no delivery to the running pod; calls %v", api.Calls())
		}
		time.Sleep(20 * time.Millisecond)
	}
	conf := del.Got("good")
	if !strings.Contains(string(conf), "server_name shop.example;") || !strings.Contains(string(conf), "return 503;") {
		t.Errorf("delivered configuration lacks the host or the 503:\n%s", conf)
	}
	calls := api.Calls()
	want := []string{"record " + Hash(conf), "annotate good " + Hash(conf) + " docker://good-1", "status shop 10.96.0.99"}
	for _, w := range want {
		if !slices.Contains(calls, w) {
			t.Errorf("calls %v lack %q", calls, w)
		}
	}
	for _, call := range calls {
		if strings.HasPrefix(call, "annotate bad") || strings.HasPrefix(call, "create pod") || strings.HasPrefix(call, "delete pod") {
			t.Errorf("unexpected %q (calls %v)", call, calls)
		}
	}
	select {
	case e := <-rec.Events:
		if !strings.Contains(e, "Warning "+ReasonServiceNotFound) || !strings.Contains(e, `"gone"`) {
			t.Errorf("event %q, want a ServiceNotFound Warning naming gone", e)
		}
	case <-time.After(10 * time.Second):
		t.Error("no event for the missing Service")
	}
}
