package informers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// PodNodeIndex files pods under spec.nodeName ("" for unscheduled pods).
const PodNodeIndex = "spec.nodeName"

// Resource names, as the bus and the API spell them.
const (
	Pods           = "pods"
	Nodes          = "nodes"
	Leases         = "leases"
	Services       = "services"
	Endpoints      = "endpoints"
	EndpointSlices = "endpointslices"
	Ingresses      = "ingresses"
)

// Source gives the list and watch of a resource; nil for a resource it does not serve.
type Source func(resource string) informer.ListerWatcher

// ClientSource lists and watches through the REST client, as typed objects. A controller that
// needs another resource adds its case here.
func ClientSource(c *client.Client) Source {
	return func(resource string) informer.ListerWatcher {
		switch resource {
		case Pods:
			return informer.ForNamespace(client.MustFor[*corev1.Pod, *corev1.PodList](c), "")
		case Nodes:
			return informer.ForNamespace(client.MustFor[*corev1.Node, *corev1.NodeList](c), "")
		case Leases:
			return informer.ForNamespace(client.MustFor[*coordinationv1.Lease, *coordinationv1.LeaseList](c), "")
		case Services:
			return informer.ForNamespace(client.MustFor[*corev1.Service, *corev1.ServiceList](c), "")
		case Endpoints:
			return informer.ForNamespace(client.MustFor[*corev1.Endpoints, *corev1.EndpointsList](c), "")
		case EndpointSlices:
			return informer.ForNamespace(client.MustFor[*discoveryv1.EndpointSlice, *discoveryv1.EndpointSliceList](c), "")
		case Ingresses:
			return informer.ForNamespace(client.MustFor[*networkingv1.Ingress, *networkingv1.IngressList](c), "")
		}
		return nil
	}
}

// Config tunes the informers of a Factory.
type Config struct {
	// RelistPeriod is the safety net under the bus: every cache is relisted this often.
	RelistPeriod time.Duration
	// FirstListWait lets each cache's first list wait for the bus's relist request (see
	// informer.Config.FirstListWait); 0 lists at once.
	FirstListWait time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
}

// Factory makes and runs the shared informers. Ask for every informer before Start.
type Factory struct {
	source Source
	cfg    Config

	mu        sync.Mutex
	informers map[string]*informer.Informer
	// newObj makes the empty typed object a bus message of the resource decodes into; nil for
	// a resource the scheme does not know, whose messages take the generic decoder.
	newObj  map[string]func() runtime.Object
	started bool
}

// New returns a factory that lists through source.
func New(source Source, cfg Config) *Factory {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Factory{source: source, cfg: cfg, informers: map[string]*informer.Informer{}, newObj: map[string]func() runtime.Object{}}
}

// Pods is the informer of all pods, indexed by PodNodeIndex.
func (f *Factory) Pods() *informer.Informer {
	return f.For(Pods, informer.Indexers{PodNodeIndex: podNode})
}

// Nodes is the informer of all nodes.
func (f *Factory) Nodes() *informer.Informer { return f.For(Nodes, nil) }

// Leases is the informer of all leases (node heartbeats and leader election).
func (f *Factory) Leases() *informer.Informer { return f.For(Leases, nil) }

// Services is the informer of all Services.
func (f *Factory) Services() *informer.Informer { return f.For(Services, nil) }

// Endpoints is the informer of all Endpoints.
func (f *Factory) Endpoints() *informer.Informer { return f.For(Endpoints, nil) }

// EndpointSlices is the informer of all EndpointSlices, with the indexers the caller needs.
func (f *Factory) EndpointSlices(indexers informer.Indexers) *informer.Informer {
	return f.For(EndpointSlices, indexers)
}

// Ingresses is the informer of all Ingresses.
func (f *Factory) Ingresses() *informer.Informer { return f.For(Ingresses, nil) }

// For returns the informer of resource, making it on first use with indexers. It panics for a
// resource the source does not serve or when called after Start: both are programming errors
// in the binary's wiring, found at its first run.
func (f *Factory) For(resource string, indexers informer.Indexers) *informer.Informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.informers[resource]; ok {
		if len(indexers) > 0 {
			if err := inf.Store().AddIndexers(indexers); err != nil && !strings.Contains(err.Error(), "already exists") {
				panic(fmt.Sprintf("informers: %s: %v", resource, err))
			}
		}
		return inf
	}
	if f.started {
		panic("informers: " + resource + " requested after Start")
	}
	lw := f.source(resource)
	if lw == nil {
		panic("informers: no source for " + resource)
	}
	inf := informer.New(informer.Config{
		Name: resource, ListerWatcher: lw, Indexers: indexers,
		NoWatch: true, RelistPeriod: f.cfg.RelistPeriod, FirstListWait: f.cfg.FirstListWait, Clock: f.cfg.Clock, Logger: f.cfg.Logger,
	})
	f.informers[resource] = inf
	if res, err := scheme.Lookup(resource); err == nil {
		f.newObj[resource] = res.New
	}
	return inf
}

// Start runs every informer made so far until ctx ends.
func (f *Factory) Start(ctx context.Context) error {
	f.mu.Lock()
	f.started = true
	all := make([]*informer.Informer, 0, len(f.informers))
	for _, inf := range f.informers {
		all = append(all, inf)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, inf := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = inf.Start(ctx) // returns only when ctx ends
		}()
	}
	wg.Wait()
	return nil
}

// HasSynced reports whether every informer has stored its first list.
func (f *Factory) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, inf := range f.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// RelistAll asks every informer to relist soon: after a bus reconnect, messages may be lost.
func (f *Factory) RelistAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, inf := range f.informers {
		inf.RequestRelist()
	}
}

// Handle is the bus handler of the controller-manager's queue: it feeds each change to the
// informer of its resource. A message nobody caches, or one that cannot be decoded, is
// acknowledged: the bus is a hint, and the next relist repairs anything missed.
func (f *Factory) Handle(_ context.Context, d bus.Delivery) error {
	resource := d.Headers[bus.HeaderResource]
	if resource == "" {
		resource, _, _ = strings.Cut(d.RoutingKey, ".")
	}
	f.mu.Lock()
	inf, newObj := f.informers[resource], f.newObj[resource]
	f.mu.Unlock()
	if inf == nil {
		return nil
	}
	var err error
	if newObj != nil {
		// One pass straight into the typed object (see informer.ApplyEvent).
		_, err = inf.ApplyEvent(d.Body, newObj())
	} else {
		var ev bus.Event
		if ev, err = bus.DecodeEvent(d.Body); err == nil {
			_, err = inf.ApplyRaw(ev.Type, ev.Object)
		}
	}
	if err != nil {
		f.cfg.Logger.Warn("dropping bus event", "key", d.RoutingKey, "err", err)
	}
	return nil
}

func podNode(obj runtime.Object) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod node index: got %T", obj)
	}
	return []string{pod.Spec.NodeName}, nil
}
