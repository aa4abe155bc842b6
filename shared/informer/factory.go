package informer

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
	"minik8s.io/shared/workqueue/clock"
)

// PodNodeIndex files pods under spec.nodeName ("" for unscheduled pods).
const PodNodeIndex = "spec.nodeName"

// Resource names, as the bus and the API spell them (the plural of shared/scheme). Any
// resource of scheme.Resources may be asked for; these are the ones controllers name often.
const (
	Pods                     = "pods"
	Nodes                    = "nodes"
	Namespaces               = "namespaces"
	Leases                   = "leases"
	Events                   = "events"
	Services                 = "services"
	Endpoints                = "endpoints"
	EndpointSlices           = "endpointslices"
	Ingresses                = "ingresses"
	IngressClasses           = "ingressclasses"
	ReplicaSets              = "replicasets"
	Deployments              = "deployments"
	DaemonSets               = "daemonsets"
	StatefulSets             = "statefulsets"
	ReplicationControllers   = "replicationcontrollers"
	ControllerRevisions      = "controllerrevisions"
	Jobs                     = "jobs"
	HorizontalPodAutoscalers = "horizontalpodautoscalers"
	PersistentVolumes        = "persistentvolumes"
	PersistentVolumeClaims   = "persistentvolumeclaims"
	StorageClasses           = "storageclasses"
	ConfigMaps               = "configmaps"
	ClusterRoles             = "clusterroles"
	Functions                = "functions"
	Workflows                = "workflows"
	WorkflowExecutions       = "workflowexecutions"
)

// Source gives the list and watch of a resource of the scheme: its typed objects, or with
// metadataOnly its objects as *metav1.PartialObjectMetadata. nil means it does not serve it.
type Source func(res *scheme.Resource, metadataOnly bool) ListerWatcher

// ClientSource lists and watches every resource of the scheme through the REST client, across
// all namespaces: typed objects (the Go types of res.New and res.NewList), or metadata only.
func ClientSource(c *client.Client) Source {
	return func(res *scheme.Resource, metadataOnly bool) ListerWatcher {
		if metadataOnly {
			return ForNamespace(client.Metadata(c, res), "")
		}
		return ForNamespace(client.For[runtime.Object, runtime.Object](c, res), "")
	}
}

// FactoryConfig tunes the informers of a Factory.
type FactoryConfig struct {
	// RelistPeriod is the safety net under the bus: every cache is relisted this often.
	RelistPeriod time.Duration
	// Watch keeps the caches with a watch instead of the bus: for a source that watches
	// cheaply, such as the apiserver's own registry.
	Watch bool
	// FirstListWait lets each cache's first list wait for the bus's relist request (see
	// Config.FirstListWait); 0 lists at once.
	FirstListWait time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
	// Metrics, when set, is told about every list and bus message.
	Metrics Metrics
}

// Metrics observes the informers of a Factory.
type Metrics interface {
	// Listed: the informer of resource stored a list of objects, or failed to list with err.
	Listed(resource string, objects int, err error)
	// BusEvent: a bus message of resource was BusApplied, BusStale (older than the cache or
	// changing nothing) or BusDropped (undecodable), per informer it was fed to.
	BusEvent(resource, result string)
}

// Results of BusEvent.
const (
	BusApplied = "applied"
	BusStale   = "stale"
	BusDropped = "dropped"
)

// Factory makes and runs informers shared by the parts of a component, one per resource (and
// one more per resource for its metadata only), fed by the component's bus queue through Handle
// and relisted on start, on RelistAll (a bus reconnect) and every RelistPeriod. Several
// controllers reading pods cost one cache and one list. Ask for every informer before Start.
type Factory struct {
	source Source
	cfg    FactoryConfig

	mu       sync.Mutex
	typed    map[string]*factoryEntry
	metadata map[string]*factoryEntry
	started  bool
}

type factoryEntry struct {
	inf *Informer
	res *scheme.Resource
}

// NewFactory returns a factory that lists through source.
func NewFactory(source Source, cfg FactoryConfig) *Factory {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Factory{source: source, cfg: cfg, typed: map[string]*factoryEntry{}, metadata: map[string]*factoryEntry{}}
}

// Pods is the informer of all pods, indexed by PodNodeIndex.
func (f *Factory) Pods() *Informer { return f.For(Pods, Indexers{PodNodeIndex: podNode}) }

// Nodes is the informer of all nodes.
func (f *Factory) Nodes() *Informer { return f.For(Nodes, nil) }

// Leases is the informer of all leases (node heartbeats and leader election).
func (f *Factory) Leases() *Informer { return f.For(Leases, nil) }

// Services is the informer of all Services.
func (f *Factory) Services() *Informer { return f.For(Services, nil) }

// Endpoints is the informer of all Endpoints.
func (f *Factory) Endpoints() *Informer { return f.For(Endpoints, nil) }

// EndpointSlices is the informer of all EndpointSlices, with the indexers the caller needs.
func (f *Factory) EndpointSlices(indexers Indexers) *Informer { return f.For(EndpointSlices, indexers) }

// Ingresses is the informer of all Ingresses.
func (f *Factory) Ingresses() *Informer { return f.For(Ingresses, nil) }

// For returns the informer of resource (a plural of scheme.Resources, such as "replicasets"),
// whose cache holds the resource's Go type, making it on first use; indexers are added to it
// either way. It panics for a resource the scheme or the source does not know, or when a new
// informer is asked for after Start: both are programming errors in the binary's wiring, found
// at its first run.
func (f *Factory) For(resource string, indexers Indexers) *Informer {
	return f.get(f.typed, resource, false, indexers)
}

// MetadataFor is For with a cache of *metav1.PartialObjectMetadata: names, labels, owner
// references, finalizers and the like, without spec and status, for readers of every kind
// (the garbage collector). The objects carry the resource's apiVersion and kind. It is a cache
// of its own: asking for both costs two lists.
func (f *Factory) MetadataFor(resource string, indexers Indexers) *Informer {
	return f.get(f.metadata, resource, true, indexers)
}

func (f *Factory) get(m map[string]*factoryEntry, resource string, metadataOnly bool, indexers Indexers) *Informer {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := m[resource]; ok {
		if len(indexers) > 0 {
			if err := e.inf.Store().AddIndexers(indexers); err != nil && !strings.Contains(err.Error(), "already exists") {
				panic(fmt.Sprintf("informer factory: %s: %v", resource, err))
			}
		}
		return e.inf
	}
	if f.started {
		panic("informer factory: " + resource + " requested after Start")
	}
	res := byPlural(resource)
	if res == nil {
		panic("informer factory: the scheme has no resource " + resource)
	}
	lw := f.source(res, metadataOnly)
	if lw == nil {
		panic("informer factory: no source for " + resource)
	}
	name := resource
	if metadataOnly {
		name += " (metadata)"
	}
	var onList func(int, error)
	if f.cfg.Metrics != nil {
		onList = func(n int, err error) { f.cfg.Metrics.Listed(name, n, err) }
	}
	inf := New(Config{
		Name: name, ListerWatcher: lw, Indexers: indexers,
		NoWatch: !f.cfg.Watch, RelistPeriod: f.cfg.RelistPeriod, FirstListWait: f.cfg.FirstListWait, Clock: f.cfg.Clock,
		Logger: f.cfg.Logger.With("informer", name), OnList: onList,
	})
	m[resource] = &factoryEntry{inf: inf, res: res}
	return inf
}

// byPlural finds a resource by its plural name alone: the bus names resources that way, and
// no two groups minik8s serves share a plural.
func byPlural(plural string) *scheme.Resource {
	for _, r := range scheme.Resources {
		if r.Plural == plural {
			return r
		}
	}
	return nil
}

// Resources lists, sorted, the resources the factory has informers for (typed or metadata):
// what its bus queue should be bound to.
func (f *Factory) Resources() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]*factoryEntry{f.typed, f.metadata} {
		for r := range m {
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	slices.Sort(out)
	return out
}

func (f *Factory) all() []*Informer {
	out := make([]*Informer, 0, len(f.typed)+len(f.metadata))
	for _, m := range []map[string]*factoryEntry{f.typed, f.metadata} {
		for _, e := range m {
			out = append(out, e.inf)
		}
	}
	return out
}

// Start runs every informer made so far until ctx ends.
func (f *Factory) Start(ctx context.Context) error {
	f.mu.Lock()
	f.started = true
	all := f.all()
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
	for _, inf := range f.all() {
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
	for _, inf := range f.all() {
		inf.RequestRelist()
	}
}

// Handle is the bus handler of the component's queue: it feeds each change to the informers
// of its resource (typed and metadata). A message nobody caches, or one that cannot be
// decoded, is acknowledged: the bus is a hint, and the next relist repairs anything missed.
func (f *Factory) Handle(_ context.Context, d bus.Delivery) error {
	resource := d.Resource()
	f.mu.Lock()
	typed, meta := f.typed[resource], f.metadata[resource]
	f.mu.Unlock()
	if typed != nil {
		// One pass straight into the typed object (see ApplyEvent).
		changed, err := typed.inf.ApplyEvent(d.Body, typed.res.New())
		f.observe(resource, d.RoutingKey, changed, err)
	}
	if meta != nil {
		// The outbox publishes whole objects with their apiVersion and kind: the metadata
		// view keeps both and leaves spec and status out.
		changed, err := meta.inf.ApplyEvent(d.Body, &metav1.PartialObjectMetadata{})
		f.observe(resource+" (metadata)", d.RoutingKey, changed, err)
	}
	return nil
}

func (f *Factory) observe(name, key string, changed bool, err error) {
	result := BusApplied
	switch {
	case err != nil:
		f.cfg.Logger.Warn("dropping bus event", "informer", name, "key", key, "err", err)
		result = BusDropped
	case !changed:
		result = BusStale
	}
	if f.cfg.Metrics != nil {
		f.cfg.Metrics.BusEvent(name, result)
	}
}

func podNode(obj runtime.Object) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("pod node index: got %T", obj)
	}
	return []string{pod.Spec.NodeName}, nil
}
