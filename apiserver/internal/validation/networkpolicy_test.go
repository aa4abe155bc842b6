package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/apiserver/internal/defaults"
)

func newNetworkPolicy() *networkingv1.NetworkPolicy {
	port := intstr.FromInt32(80)
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
				From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{}}},
			}},
		}}
}

// NetworkPolicies are checked as Kubernetes' ValidateNetworkPolicy checks them.
func TestNetworkPolicyValidation(t *testing.T) {
	in0 := func(np *networkingv1.NetworkPolicy) *networkingv1.NetworkPolicyIngressRule {
		return &np.Spec.Ingress[0]
	}
	runCreate(t, NetworkPolicy, defaults.NetworkPolicy, newNetworkPolicy, []createCase[*networkingv1.NetworkPolicy]{
		{name: "valid"},
		{name: "selector", mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.PodSelector.MatchLabels = map[string]string{"a b": "x"} },
			want: []problem{inv("spec.podSelector.matchLabels")}},
		{name: "port range", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).Ports[0].Port = ptr(intstr.FromInt32(70000)) },
			want: []problem{inv("spec.ingress[0].ports[0].port")}},
		{name: "endPort below port", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).Ports[0].EndPort = ptr(int32(10)) },
			want: []problem{inv("spec.ingress[0].ports[0].endPort")}},
		{name: "endPort with named port", mutate: func(np *networkingv1.NetworkPolicy) {
			in0(np).Ports[0].Port, in0(np).Ports[0].EndPort = ptr(intstr.FromString("http")), ptr(int32(90))
		}, want: []problem{inv("spec.ingress[0].ports[0].endPort")}},
		{name: "endPort without port", mutate: func(np *networkingv1.NetworkPolicy) {
			in0(np).Ports[0].Port, in0(np).Ports[0].EndPort = nil, ptr(int32(90))
		}, want: []problem{inv("spec.ingress[0].ports[0].endPort")}},
		{name: "protocol", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).Ports[0].Protocol = ptr(corev1.Protocol("ICMP")) },
			want: []problem{nsup("spec.ingress[0].ports[0].protocol")}},
		{name: "empty peer", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).From[0] = networkingv1.NetworkPolicyPeer{} },
			want: []problem{req("spec.ingress[0].from[0]")}},
		{name: "ipBlock with another peer", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).From[0].PodSelector = &metav1.LabelSelector{} },
			want: []problem{forb("spec.ingress[0].from[0]")}},
		{name: "cidr required", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).From[0].IPBlock.CIDR = "" },
			want: []problem{req("spec.ingress[0].from[0].ipBlock.cidr")}},
		{name: "bad cidr", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).From[0].IPBlock.CIDR = "10.0.0.0/40" },
			want: []problem{inv("spec.ingress[0].from[0].ipBlock.cidr")}},
		{name: "except not a subset", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).From[0].IPBlock.Except = []string{"192.168.0.0/16"} },
			want: []problem{inv("spec.ingress[0].from[0].ipBlock.except[0]")}},
		{name: "except not strict", mutate: func(np *networkingv1.NetworkPolicy) { in0(np).From[0].IPBlock.Except = []string{"10.0.0.0/8"} },
			want: []problem{inv("spec.ingress[0].from[0].ipBlock.except[0]")}},
		{name: "empty egress peer", mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.Egress[0].To[0] = networkingv1.NetworkPolicyPeer{} },
			want: []problem{req("spec.egress[0].to[0]")}},
		{name: "policy type", mutate: func(np *networkingv1.NetworkPolicy) { np.Spec.PolicyTypes = []networkingv1.PolicyType{"Sideways"} },
			want: []problem{nsup("spec.policyTypes[0]")}},
		{name: "too many policy types", mutate: func(np *networkingv1.NetworkPolicy) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{"Ingress", "Egress", "Ingress"}
		}, want: []problem{inv("spec.policyTypes")}},
	})
}

// Defaults as Kubernetes': TCP ports, and policyTypes from the rules given.
func TestNetworkPolicyDefaults(t *testing.T) {
	np := newNetworkPolicy()
	defaults.NetworkPolicy(np)
	if p := np.Spec.Ingress[0].Ports[0].Protocol; p == nil || *p != corev1.ProtocolTCP {
		t.Fatalf("protocol %v", p)
	}
	if got := np.Spec.PolicyTypes; len(got) != 2 || got[0] != networkingv1.PolicyTypeIngress || got[1] != networkingv1.PolicyTypeEgress {
		t.Fatalf("policyTypes %v", got)
	}
	np = newNetworkPolicy()
	np.Spec.Egress = nil
	defaults.NetworkPolicy(np)
	if got := np.Spec.PolicyTypes; len(got) != 1 || got[0] != networkingv1.PolicyTypeIngress {
		t.Fatalf("policyTypes without egress %v", got)
	}
}
