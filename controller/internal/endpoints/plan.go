package endpoints

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/controller/internal/backends"
	"minik8s.io/shared/podstatus"
)

// Labels and annotations the controller writes, as Kubernetes spells them.
const (
	// LabelManagedBy marks Endpoints this controller manages; only those are deleted with
	// their Service.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	ManagedBy      = "endpoint-controller"
	// LabelHeadless is set on the Endpoints of a headless Service (clusterIP: None).
	LabelHeadless = "service.kubernetes.io/headless"
	// MaxAddresses bounds one Endpoints object, as in Kubernetes; beyond it the object is
	// truncated and annotated corev1.EndpointsOverCapacity.
	MaxAddresses = 1000
)

// Desired is the Endpoints svc should have, given the pods of its namespace that its selector
// picks (others are ignored): a pure function, with addresses, ports and subsets in a fixed
// order so that equal inputs give equal objects.
func Desired(svc *corev1.Service, pods []*corev1.Pod) *corev1.Endpoints {
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name, Labels: Labels(svc)},
	}
	publish := svc.Spec.PublishNotReadyAddresses
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	type member struct {
		addr  corev1.EndpointAddress
		ready bool
		ports []corev1.EndpointPort
	}
	var members []member
	for _, pod := range pods {
		if !backends.Matches(svc, pod) || !backends.Included(pod, publish) {
			continue
		}
		m := member{addr: address(pod, svc), ready: publish || podstatus.Ready(pod)}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			num, err := backends.Port(pod, sp)
			if err != nil {
				continue // this pod does not serve this port; Kubernetes leaves it out too
			}
			m.ports = append(m.ports, corev1.EndpointPort{Name: sp.Name, Port: num, Protocol: protocol(sp.Protocol), AppProtocol: sp.AppProtocol})
		}
		// A pod without any of the Service's ports is no endpoint of it; a headless Service
		// without ports still lists its pods (DNS needs their addresses).
		if len(m.ports) == 0 && !(headless && len(svc.Spec.Ports) == 0) {
			continue
		}
		sortPorts(m.ports)
		members = append(members, m)
	}
	// Pods that serve the same ports share a subset (Kubernetes' RepackSubsets).
	bySet := map[string]*corev1.EndpointSubset{}
	for _, m := range members {
		k := portsKey(m.ports)
		s := bySet[k]
		if s == nil {
			s = &corev1.EndpointSubset{Ports: m.ports}
			bySet[k] = s
		}
		if m.ready {
			s.Addresses = append(s.Addresses, m.addr)
		} else {
			s.NotReadyAddresses = append(s.NotReadyAddresses, m.addr)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(bySet)) {
		ep.Subsets = append(ep.Subsets, *bySet[k])
	}
	Normalize(ep.Subsets)
	if truncate(ep) {
		ep.Annotations = map[string]string{corev1.EndpointsOverCapacity: "truncated"}
	}
	return ep
}

// Labels are the Endpoints' labels: the Service's, plus the controller's own.
func Labels(svc *corev1.Service) map[string]string {
	l := maps.Clone(svc.Labels)
	if l == nil {
		l = map[string]string{}
	}
	delete(l, LabelHeadless)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[LabelHeadless] = ""
	}
	l[LabelManagedBy] = ManagedBy
	return l
}

func address(pod *corev1.Pod, svc *corev1.Service) corev1.EndpointAddress {
	a := corev1.EndpointAddress{
		IP:        backends.IPv4(pod),
		Hostname:  backends.Hostname(pod, svc),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		a.NodeName = &node
	}
	return a
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func sortPorts(ports []corev1.EndpointPort) {
	slices.SortFunc(ports, func(a, b corev1.EndpointPort) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
	})
}

func portsKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%d/%s;", p.Name, p.Port, p.Protocol)
	}
	return b.String()
}

func sortAddresses(a []corev1.EndpointAddress) {
	slices.SortFunc(a, func(x, y corev1.EndpointAddress) int {
		return cmp.Or(cmp.Compare(x.IP, y.IP), cmp.Compare(targetName(x), targetName(y)))
	})
}

func targetName(a corev1.EndpointAddress) string {
	if a.TargetRef == nil {
		return ""
	}
	return a.TargetRef.Name
}

// Normalize puts subsets in Desired's order, so that a stored object compares equal to the
// desired one when only the order differs.
func Normalize(subsets []corev1.EndpointSubset) {
	for i := range subsets {
		sortPorts(subsets[i].Ports)
		sortAddresses(subsets[i].Addresses)
		sortAddresses(subsets[i].NotReadyAddresses)
	}
	slices.SortFunc(subsets, func(a, b corev1.EndpointSubset) int {
		return cmp.Compare(portsKey(a.Ports), portsKey(b.Ports))
	})
}

// truncate keeps at most MaxAddresses addresses, ready ones first; it reports whether any
// were dropped.
func truncate(ep *corev1.Endpoints) bool {
	total := 0
	for _, s := range ep.Subsets {
		total += len(s.Addresses) + len(s.NotReadyAddresses)
	}
	if total <= MaxAddresses {
		return false
	}
	room := MaxAddresses
	for i := range ep.Subsets {
		s := &ep.Subsets[i]
		n := min(room, len(s.Addresses))
		s.Addresses, room = s.Addresses[:n], room-n
	}
	for i := range ep.Subsets {
		s := &ep.Subsets[i]
		n := min(room, len(s.NotReadyAddresses))
		s.NotReadyAddresses, room = s.NotReadyAddresses[:n], room-n
	}
	ep.Subsets = slices.DeleteFunc(ep.Subsets, func(s corev1.EndpointSubset) bool {
		return len(s.Addresses) == 0 && len(s.NotReadyAddresses) == 0
	})
	return true
}

// Update returns current changed to match desired, or nil when it already does (no write).
// Labels are the Service's plus the controller's, as in Kubernetes; of the annotations only
// the over-capacity one is the controller's.
func Update(current, desired *corev1.Endpoints) *corev1.Endpoints {
	cur := current.DeepCopy()
	Normalize(cur.Subsets)
	wantOver := desired.Annotations[corev1.EndpointsOverCapacity]
	if apiequality.Semantic.DeepEqual(cur.Subsets, desired.Subsets) &&
		maps.Equal(cur.Labels, desired.Labels) &&
		cur.Annotations[corev1.EndpointsOverCapacity] == wantOver {
		return nil
	}
	cur.Subsets = desired.Subsets
	cur.Labels = desired.Labels
	if wantOver != "" {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[corev1.EndpointsOverCapacity] = wantOver
	} else {
		delete(cur.Annotations, corev1.EndpointsOverCapacity)
	}
	return cur
}
