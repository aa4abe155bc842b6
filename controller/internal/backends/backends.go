package backends

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/shared/podstatus"
)

// Selects reports whether svc picks its endpoints by selector (what the controllers manage):
// a Service without a selector, or of type ExternalName, has endpoints its user writes, or
// none.
func Selects(svc *corev1.Service) bool {
	return len(svc.Spec.Selector) > 0 && svc.Spec.Type != corev1.ServiceTypeExternalName
}

// Matches reports whether svc selects pod: same namespace, selector matching its labels.
func Matches(svc *corev1.Service, pod *corev1.Pod) bool {
	return Selects(svc) && svc.Namespace == pod.Namespace &&
		labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels))
}

// Included reports whether pod has a place among a Service's endpoints at all, as Kubernetes'
// ShouldPodBeInEndpoints: it has an IPv4 address and has not finished; a terminating pod
// counts only with includeTerminating (EndpointSlices list it as terminating; Endpoints only
// for Services that publish not-ready addresses).
func Included(pod *corev1.Pod, includeTerminating bool) bool {
	if IPv4(pod) == "" {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return includeTerminating || pod.DeletionTimestamp == nil
}

// IPv4 is the pod's IPv4 address (status.podIPs, else status.podIP), or "".
func IPv4(pod *corev1.Pod) string {
	ips := []string{pod.Status.PodIP}
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() {
			return a.String()
		}
	}
	return ""
}

// Hostname is the DNS hostname the pod has under svc: spec.hostname, when the pod's subdomain
// names this Service in the same namespace (how headless Services give pods stable names).
func Hostname(pod *corev1.Pod, svc *corev1.Service) string {
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && pod.Namespace == svc.Namespace {
		return pod.Spec.Hostname
	}
	return ""
}

// Port resolves a Service port's targetPort on pod: a number as it is, a name by the pod's
// container port of that name and protocol. An unset targetPort means the port itself.
func Port(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	switch tp := sp.TargetPort; {
	case tp.Type == intstr.String && tp.StrVal != "":
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				pp := p.Protocol
				if pp == "" {
					pp = corev1.ProtocolTCP
				}
				if p.Name == tp.StrVal && pp == proto {
					return p.ContainerPort, nil
				}
			}
		}
		return 0, fmt.Errorf("pod %s/%s has no %s container port named %q", pod.Namespace, pod.Name, proto, tp.StrVal)
	case tp.Type == intstr.Int && tp.IntVal > 0:
		return tp.IntVal, nil
	default:
		return sp.Port, nil
	}
}

// Relevant is what of a pod its endpoints depend on: a pod update whose Relevant is equal
// (and whose labels did not change) cannot change any Service's endpoints.
type Relevant struct {
	IP, Node, Hostname, Subdomain string
	Ready, Terminating            bool
	Phase                         corev1.PodPhase
	Ports                         string
}

// RelevantOf extracts Relevant from pod.
func RelevantOf(pod *corev1.Pod) Relevant {
	r := Relevant{
		IP: IPv4(pod), Node: pod.Spec.NodeName, Hostname: pod.Spec.Hostname, Subdomain: pod.Spec.Subdomain,
		Ready: podstatus.Ready(pod), Terminating: pod.DeletionTimestamp != nil, Phase: pod.Status.Phase,
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			r.Ports += fmt.Sprintf("%s/%s/%d,", p.Name, p.Protocol, p.ContainerPort)
		}
	}
	return r
}
