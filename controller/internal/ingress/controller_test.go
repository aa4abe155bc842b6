package ingress

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"minik8s.io/shared/client/fake"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/informer/informertest"
	"minik8s.io/shared/record"
	"minik8s.io/shared/testwait"
)

// fakes are the controller's writers, in memory; pod patches reach the pods informer, as the
// bus would bring them.
type fakes struct {
	namespaces *fake.Writer[*corev1.Namespace]
	services   *fake.Writer[*corev1.Service]
	pods       *fake.Writer[*corev1.Pod]
	configMaps *fake.Writer[*corev1.ConfigMap]
	ingresses  *fake.Writer[*networkingv1.Ingress]
	classes    *fake.Writer[*networkingv1.IngressClass]
}

func newFakes() *fakes {
	return &fakes{
		namespaces: fake.New(func() *corev1.Namespace { return &corev1.Namespace{} }),
		services:   fake.New(func() *corev1.Service { return &corev1.Service{} }),
		pods:       fake.New(func() *corev1.Pod { return &corev1.Pod{} }),
		configMaps: fake.New(func() *corev1.ConfigMap { return &corev1.ConfigMap{} }),
		ingresses:  fake.New(func() *networkingv1.Ingress { return &networkingv1.Ingress{} }),
		classes:    fake.New(func() *networkingv1.IngressClass { return &networkingv1.IngressClass{} }),
	}
}

// with is cfg writing through the fakes.
func (f *fakes) with(cfg Config) Config {
	cfg.Namespaces, cfg.Services, cfg.Pods = f.namespaces, f.services, fedPods{f.pods, cfg.PodInformer}
	cfg.ConfigMaps, cfg.Ingresses, cfg.IngressClasses = f.configMaps, f.ingresses, f.classes
	return cfg
}

// Calls are the writes made, in words, by kind.
func (f *fakes) Calls() []string {
	var out []string
	for _, c := range f.configMaps.Calls() {
		if c.Verb == fake.VerbCreate || c.Verb == fake.VerbUpdate {
			out = append(out, "record "+Hash([]byte(c.Object.(*corev1.ConfigMap).Data[ConfigMapKey])))
		}
	}
	for _, c := range f.pods.Calls() {
		switch c.Verb {
		case fake.VerbCreate:
			out = append(out, "create pod")
		case fake.VerbDelete:
			out = append(out, "delete pod "+c.Name)
		case fake.VerbPatch:
			var p struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := json.Unmarshal(c.Patch, &p); err == nil {
				out = append(out, "annotate "+c.Name+" "+p.Metadata.Annotations[ConfigAnnotation])
			}
		}
	}
	for _, c := range f.ingresses.CallsOf(fake.VerbUpdateStatus) {
		ing := c.Object.(*networkingv1.Ingress)
		out = append(out, "status "+ing.Name+" "+ing.Status.LoadBalancer.Ingress[0].IP)
	}
	return out
}

// fedPods is a pods writer whose patches reach an informer.
type fedPods struct {
	*fake.Writer[*corev1.Pod]
	inf *informer.Informer
}

func (f fedPods) Patch(ctx context.Context, ns, name string, pt types.PatchType, data []byte, sub ...string) (*corev1.Pod, error) {
	out, err := f.Writer.Patch(ctx, ns, name, pt, data, sub...)
	if err == nil {
		_, err = f.inf.Apply(watch.Modified, out)
	}
	return out, err
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
	api := newFakes()
	ing = api.ingresses.Put(ing)
	good, bad := api.pods.Put(nginxPod("good", labelled)), api.pods.Put(nginxPod("bad", labelled))
	mk := func(name string, objs ...runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: informertest.Fixed(objs...), NoWatch: true, RelistPeriod: time.Hour})
	}
	ings, svcs, pods := mk("ingresses", ing), mk("services", nginxSvc), mk("pods", good, bad)
	// Our class is the default one, so the Ingress naming none is ours.
	classes := mk("ingressclasses", ClassToMake(DefaultClass, nil))
	del := &fakeDeliverer{got: map[string][]byte{}, fails: map[string]bool{"bad": true}}
	rec := record.NewFake(100)
	c := New(api.with(Config{IngressInformer: ings, IngressClassInformer: classes, ServiceInformer: svcs, PodInformer: pods,
		Deliverer: del, Recorder: rec, Replicas: 2}))
	var wg sync.WaitGroup
	for _, r := range []interface{ Start(context.Context) error }{ings, classes, svcs, pods, c} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
	defer wg.Wait()
	defer cancel()

	deadline := time.Now().Add(30 * time.Second)
	made := func(prefix string) bool {
		return slices.ContainsFunc(api.Calls(), func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	// The status is written after the deliveries, in the same sync.
	for del.Got("good") == nil || !made("annotate good ") || !made("status ") {
		if time.Now().After(deadline) {
			t.Fatalf("no delivery to the running pod, or no status; calls %v", api.Calls())
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

// TestControllerMakesItsClass: at start the controller makes its IngressClass, not marked
// default while another class is, and serves nothing of the other class's.
func TestControllerMakesItsClass(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	other := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "traefik", ResourceVersion: "2",
		Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
		Spec: networkingv1.IngressClassSpec{Controller: "traefik.io/ingress-controller"}}
	theirs := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "theirs", ResourceVersion: "3"},
		Spec: networkingv1.IngressSpec{IngressClassName: &other.Name}}
	// Made before any class was default: it names none, and traefik is the default now.
	classless := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "classless", ResourceVersion: "4"}}
	api := newFakes()
	mk := func(name string, objs ...runtime.Object) *informer.Informer {
		return informer.New(informer.Config{Name: name, ListerWatcher: informertest.Fixed(objs...), NoWatch: true, RelistPeriod: time.Hour})
	}
	ings, classes, svcs, pods := mk("ingresses", theirs, classless), mk("ingressclasses", other), mk("services"), mk("pods")
	c := New(api.with(Config{IngressInformer: ings, IngressClassInformer: classes, ServiceInformer: svcs, PodInformer: pods,
		Deliverer: &fakeDeliverer{got: map[string][]byte{}}, Recorder: record.NewFake(10)}))
	var wg sync.WaitGroup
	for _, r := range []interface{ Start(context.Context) error }{ings, classes, svcs, pods, c} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Start(ctx) }()
	}
	testwait.For(t, "the controller's IngressClass", func() bool { return len(api.classes.Objects()) == 1 })
	cancel()
	wg.Wait()
	made := api.classes.Objects()[0]
	if made.Name != DefaultClass || made.Spec.Controller != ControllerName || IsDefault(made) {
		t.Errorf("made %+v, want %s for %s, not default beside traefik", made, DefaultClass, ControllerName)
	}
	// Neither Ingress brings up nginx: nothing is ours to serve.
	if _, err := c.Reconcile(t.Context(), syncKey); err != nil {
		t.Fatal(err)
	}
	if calls := api.Calls(); len(calls) != 0 || len(api.services.Objects()) != 0 || len(api.namespaces.Objects()) != 0 {
		t.Errorf("an Ingress was served: calls %v, services %d", calls, len(api.services.Objects()))
	}
}
