package endpointslice

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/backends"
	"minik8s.io/shared/podstatus"
)

// Names the controller writes, as Kubernetes spells them.
const (
	ManagedBy = "endpointslice-controller.k8s.io"
	// LabelHeadless is set on the slices of a headless Service.
	LabelHeadless = "service.kubernetes.io/headless"
	// MaxEndpointsPerSlice is Kubernetes' default --max-endpoints-per-slice.
	MaxEndpointsPerSlice = 100
)

// Input is everything the slices of one Service depend on.
type Input struct {
	Service *corev1.Service
	// Pods are the pods of the Service's namespace its selector picks (others are ignored).
	Pods []*corev1.Pod
	// Zones maps node names to their topology.kubernetes.io/zone label.
	Zones map[string]string
	// Existing are the slices this controller made for the Service (by its service-name and
	// managed-by labels).
	Existing []*discoveryv1.EndpointSlice
	// MaxPerSlice bounds the endpoints of one slice; 0 means MaxEndpointsPerSlice.
	MaxPerSlice int
}

// Plan is what to write. Created slices have generateName set and no name.
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
}

// Empty reports whether the plan writes nothing.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// group is the desired endpoints that share one set of ports.
type group struct {
	ports []discoveryv1.EndpointPort
	eps   map[string]discoveryv1.Endpoint // by endpointKey
}

// Desired groups the Service's endpoints by their resolved ports, keyed by portsKey.
func Desired(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string) map[string]*group {
	out := map[string]*group{}
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	for _, pod := range pods {
		// Terminating pods stay, marked terminating, so that consumers can drain them.
		if !backends.Matches(svc, pod) || !backends.Included(pod, true) {
			continue
		}
		var ports []discoveryv1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			num, err := backends.Port(pod, sp)
			if err != nil {
				continue
			}
			name, proto := sp.Name, sp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ports = append(ports, discoveryv1.EndpointPort{Name: &name, Port: &num, Protocol: &proto, AppProtocol: sp.AppProtocol})
		}
		if len(ports) == 0 && !(headless && len(svc.Spec.Ports) == 0) {
			continue
		}
		sortPorts(ports)
		k := portsKey(ports)
		g := out[k]
		if g == nil {
			g = &group{ports: ports, eps: map[string]discoveryv1.Endpoint{}}
			out[k] = g
		}
		ep := endpoint(pod, svc, zones)
		g.eps[endpointKey(ep)] = ep
	}
	return out
}

// endpoint is a pod as Kubernetes' EndpointSlice controller lists it: serving is the pod's
// readiness, ready is serving and not terminating (or anything, for a Service that publishes
// not-ready addresses).
func endpoint(pod *corev1.Pod, svc *corev1.Service, zones map[string]string) discoveryv1.Endpoint {
	serving := podstatus.Ready(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  []string{backends.IPv4(pod)},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if n := pod.Spec.NodeName; n != "" {
		ep.NodeName = &n
		if z := zones[n]; z != "" {
			ep.Zone = &z
		}
	}
	if h := backends.Hostname(pod, svc); h != "" {
		ep.Hostname = &h
	}
	return ep
}

// endpointKey identifies an endpoint across syncs: its address and its pod (two host-network
// pods may share an address).
func endpointKey(ep discoveryv1.Endpoint) string {
	k := strings.Join(ep.Addresses, ",")
	if ep.TargetRef != nil {
		k += "/" + ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
	}
	return k
}

// compareKeys orders endpoint keys by address (numerically), then pod.
func compareKeys(a, b string) int {
	ipA, _, _ := strings.Cut(a, "/")
	ipB, _, _ := strings.Cut(b, "/")
	addrA, errA := netip.ParseAddr(ipA)
	addrB, errB := netip.ParseAddr(ipB)
	if errA == nil && errB == nil {
		if c := addrA.Compare(addrB); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

func sortPorts(ports []discoveryv1.EndpointPort) {
	slices.SortFunc(ports, func(a, b discoveryv1.EndpointPort) int {
		return cmp.Or(cmp.Compare(deref(a.Name), deref(b.Name)), cmp.Compare(deref(a.Port), deref(b.Port)), cmp.Compare(deref(a.Protocol), deref(b.Protocol)))
	})
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	ps := slices.Clone(ports)
	sortPorts(ps)
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "%s/%d/%s/%s;", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol))
	}
	return b.String()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Labels are the slices' labels: the Service's, and the ones that tie a slice to its Service
// and to this controller.
func Labels(svc *corev1.Service) map[string]string {
	l := maps.Clone(svc.Labels)
	if l == nil {
		l = map[string]string{}
	}
	delete(l, LabelHeadless)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[LabelHeadless] = ""
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ManagedBy
	return l
}

func ownerRef(svc *corev1.Service) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes}
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.Kind == "Service" && o.UID == svc.UID && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// work is one slice being planned: an existing one (with its new endpoints) or a new one.
type work struct {
	orig    *discoveryv1.EndpointSlice // nil for a new slice
	ports   []discoveryv1.EndpointPort
	eps     []discoveryv1.Endpoint
	changed bool
}

// Compute plans the slices of in.Service. Endpoints stay in the slice that holds them (only
// their content is refreshed); new ones fill slices being written anyway first, then slices
// with room, then new slices; emptied slices are deleted. A Service without endpoints keeps
// one empty placeholder slice, as in Kubernetes. Nothing is written when nothing changed.
func Compute(in Input) Plan {
	maxPer := in.MaxPerSlice
	if maxPer <= 0 {
		maxPer = MaxEndpointsPerSlice
	}
	svc := in.Service
	wantLabels := Labels(svc)
	desired := Desired(svc, in.Pods, in.Zones)
	existing := slices.Clone(in.Existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })

	var plan Plan
	var kept []*work
	// reusable are owned slices whose ports are no longer wanted and that hold no endpoints
	// (a placeholder, typically): a slice that must be made takes one of them instead.
	var reusable []*discoveryv1.EndpointSlice
	placed := map[string]bool{}
	for _, s := range existing {
		g := desired[portsKey(s.Ports)]
		owned := ownedBy(s, svc) && s.AddressType == discoveryv1.AddressTypeIPv4
		if owned && g == nil && len(desired) > 0 && len(s.Endpoints) == 0 {
			reusable = append(reusable, s)
			continue
		}
		if !owned || (g == nil && len(desired) > 0) {
			plan.Delete = append(plan.Delete, s)
			continue
		}
		w := &work{orig: s, ports: s.Ports}
		for _, ep := range s.Endpoints {
			k := endpointKey(ep)
			if g == nil || placed[k] {
				continue
			}
			want, ok := g.eps[k]
			if !ok {
				continue
			}
			placed[k] = true
			w.eps = append(w.eps, want)
		}
		w.changed = !apiequality.Semantic.DeepEqual(w.eps, s.Endpoints) || !maps.Equal(s.Labels, wantLabels)
		kept = append(kept, w)
	}

	for _, pk := range slices.Sorted(maps.Keys(desired)) {
		g := desired[pk]
		var todo []string
		for _, k := range slices.SortedFunc(maps.Keys(g.eps), compareKeys) {
			if !placed[k] {
				todo = append(todo, k)
			}
		}
		// Slices written anyway take new endpoints first, then any with room.
		for _, pass := range []bool{true, false} {
			for _, w := range kept {
				if len(todo) == 0 {
					break
				}
				if w.changed != pass || portsKey(w.ports) != pk || len(w.eps) >= maxPer {
					continue
				}
				n := min(maxPer-len(w.eps), len(todo))
				for _, k := range todo[:n] {
					w.eps = append(w.eps, g.eps[k])
				}
				todo, w.changed = todo[n:], true
			}
		}
		for len(todo) > 0 {
			n := min(maxPer, len(todo))
			w := &work{ports: g.ports, changed: true}
			if len(reusable) > 0 {
				w.orig, reusable = reusable[0], reusable[1:]
			}
			for _, k := range todo[:n] {
				w.eps = append(w.eps, g.eps[k])
			}
			todo = todo[n:]
			kept = append(kept, w)
		}
	}

	// With no endpoints at all, one slice stays as an empty placeholder.
	if len(desired) == 0 {
		if len(kept) == 0 {
			kept = append(kept, &work{changed: true})
		}
		for _, w := range kept[1:] {
			plan.Delete = append(plan.Delete, w.orig)
		}
		w := kept[0]
		if w.orig != nil && (len(w.orig.Ports) > 0 || len(w.orig.Endpoints) > 0) {
			w.changed, w.ports, w.eps = true, nil, nil
		}
		kept = kept[:1]
	}

	plan.Delete = append(plan.Delete, reusable...)
	for _, w := range kept {
		switch {
		case w.orig == nil:
			plan.Create = append(plan.Create, newSlice(svc, wantLabels, w))
		case len(w.eps) == 0 && len(desired) > 0:
			plan.Delete = append(plan.Delete, w.orig)
		case w.changed:
			s := w.orig.DeepCopy()
			s.Labels = maps.Clone(wantLabels)
			s.Endpoints, s.Ports = nonNil(w.eps), nonNil(w.ports)
			plan.Update = append(plan.Update, s)
		}
	}
	return plan
}

func newSlice(svc *corev1.Service, lbls map[string]string, w *work) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: svc.Namespace, GenerateName: svc.Name + "-",
			Labels: maps.Clone(lbls), OwnerReferences: []metav1.OwnerReference{ownerRef(svc)},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   nonNil(w.eps),
		Ports:       nonNil(w.ports),
	}
}

// nonNil makes an empty list [] rather than null in JSON: the API lists endpoints and ports
// of a placeholder as empty.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ForDeletedService plans the deletion of every slice of a Service that no longer exists.
func ForDeletedService(existing []*discoveryv1.EndpointSlice) Plan {
	return Plan{Delete: slices.Clone(existing)}
}
