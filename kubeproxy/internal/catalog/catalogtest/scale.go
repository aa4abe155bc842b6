package catalogtest

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Scale returns n ClusterIP Services in namespace bench (every tenth a NodePort), each with
// one port and an EndpointSlice of two ready endpoints: the shape the benchmarks measure.
func Scale(n int) ([]*corev1.Service, []*discoveryv1.EndpointSlice) {
	services := make([]*corev1.Service, 0, n)
	slices := make([]*discoveryv1.EndpointSlice, 0, n)
	name, port, proto := "http", int32(8080), corev1.ProtocolTCP
	for i := range n {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("svc-%05d", i)},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
				ClusterIP: netip.AddrFrom4([4]byte{10, 96, byte(i >> 8), byte(i)}).String(),
				Ports:     []corev1.ServicePort{{Name: name, Protocol: proto, Port: 80, TargetPort: intstr.FromInt32(port)}}},
		}
		if i%10 == 0 {
			svc.Spec.Type = corev1.ServiceTypeNodePort
			svc.Spec.Ports[0].NodePort = int32(30000 + i/10)
		}
		services = append(services, svc)
		slices = append(slices, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "bench", Name: svc.Name + "-1", Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Protocol: &proto, Port: &port}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{netip.AddrFrom4([4]byte{10, 244, byte(i >> 7), byte(i << 1)}).String()}},
				{Addresses: []string{netip.AddrFrom4([4]byte{10, 245, byte(i >> 7), byte(i<<1) | 1}).String()}},
			},
		})
	}
	return services, slices
}
