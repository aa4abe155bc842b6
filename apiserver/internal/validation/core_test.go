package validation

import (
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/defaults"
)

func TestService(t *testing.T) {
	runCreate(t, Service, defaults.Service, newService, []createCase[*corev1.Service]{
		{name: "valid"},
		{name: "name must be DNS-1035", mutate: func(s *corev1.Service) { s.Name = "1web" }, want: []problem{inv("metadata.name")}},
		{name: "ports required", mutate: func(s *corev1.Service) { s.Spec.Ports = nil }, want: []problem{req("spec.ports")}},
		{name: "headless needs no ports", mutate: func(s *corev1.Service) { s.Spec.Ports = nil; s.Spec.ClusterIP = "None" }},
		{name: "external name", mutate: func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeExternalName
			s.Spec.Ports = nil
			s.Spec.ExternalName = "db.example.com"
		}},
		{name: "external name required", mutate: func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }, want: []problem{req("spec.externalName")}},
		{name: "port range", mutate: func(s *corev1.Service) { s.Spec.Ports[0].Port = 0; s.Spec.Ports[0].TargetPort = intstr.FromInt32(8080) }, want: []problem{inv("spec.ports[0].port")}},
		{name: "protocol", mutate: func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "ICMP" }, want: []problem{nsup("spec.ports[0].protocol")}},
		{name: "type", mutate: func(s *corev1.Service) { s.Spec.Type = "Magic" }, want: []problem{nsup("spec.type")}},
		{name: "node port on ClusterIP", mutate: func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30080 }, want: []problem{forb("spec.ports[0].nodePort")}},
		{name: "node port range", mutate: func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 8080
		}, want: []problem{inv("spec.ports[0].nodePort")}},
		{name: "node port in range", mutate: func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
		}},
		{name: "cluster IP", mutate: func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.300" },
			want: []problem{inv("spec.clusterIP"), inv("spec.clusterIPs[0]")}},
		{name: "second port needs a name", mutate: func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 443})
		}, want: []problem{req("spec.ports[1].name")}},
		{name: "duplicate port", mutate: func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "again", Port: 80})
		}, want: []problem{dup("spec.ports[1]")}},
	})
	withIP := func() *corev1.Service { s := newService(); s.Spec.ClusterIP = "10.96.0.10"; return s }
	runUpdate(t, Service, defaults.Service, withIP, []updateCase[*corev1.Service]{
		{name: "selector may change", mutate: func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "v2"} }},
		{name: "cluster IP immutable", mutate: func(s *corev1.Service) {
			s.Spec.ClusterIP = "10.96.0.11"
			s.Spec.ClusterIPs = []string{"10.96.0.11"}
		}, want: []problem{inv("spec.clusterIP")}},
	})
}

func TestEndpoints(t *testing.T) {
	good := func() *corev1.Endpoints {
		return &corev1.Endpoints{ObjectMeta: meta("web"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.1.5"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}},
		}}}
	}
	runCreate(t, Endpoints, defaults.Endpoints, good, []createCase[*corev1.Endpoints]{
		{name: "valid"},
		{name: "ip", mutate: func(e *corev1.Endpoints) { e.Subsets[0].Addresses[0].IP = "pod-1" }, want: []problem{inv("subsets[0].addresses[0].ip")}},
		{name: "port", mutate: func(e *corev1.Endpoints) { e.Subsets[0].Ports[0].Port = 99999 }, want: []problem{inv("subsets[0].ports[0].port")}},
	})
}

func TestEndpointSlice(t *testing.T) {
	good := func() *discoveryv1.EndpointSlice {
		name, port := "http", int32(80)
		return &discoveryv1.EndpointSlice{ObjectMeta: meta("web-abcde"), AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}}},
			Ports:     []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
	}
	bad := int32(0)
	runCreate(t, EndpointSlice, nil, good, []createCase[*discoveryv1.EndpointSlice]{
		{name: "valid"},
		{name: "no address type", mutate: func(e *discoveryv1.EndpointSlice) { e.AddressType = "" }, want: []problem{req("addressType")}},
		{name: "unknown address type", mutate: func(e *discoveryv1.EndpointSlice) { e.AddressType = "IPv5" }, want: []problem{{field.ErrorTypeNotSupported, "addressType"}}},
		{name: "not IPv4", mutate: func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses[0] = "fe80::1" }, want: []problem{inv("endpoints[0].addresses[0]")}},
		{name: "no address", mutate: func(e *discoveryv1.EndpointSlice) { e.Endpoints[0].Addresses = nil }, want: []problem{req("endpoints[0].addresses")}},
		{name: "port", mutate: func(e *discoveryv1.EndpointSlice) { e.Ports[0].Port = &bad }, want: []problem{inv("ports[0].port")}},
	})
}

func TestClusterScoped(t *testing.T) {
	runCreate(t, Namespace, defaults.Namespace, func() *corev1.Namespace { return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}} }, []createCase[*corev1.Namespace]{
		{name: "valid"},
		{name: "label not subdomain", mutate: func(n *corev1.Namespace) { n.Name = "team.a" }, want: []problem{inv("metadata.name")}},
		{name: "namespace forbidden", mutate: func(n *corev1.Namespace) { n.Namespace = "default" }, want: []problem{forb("metadata.namespace")}},
	})
	node := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	}
	runCreate(t, Node, defaults.Node, node, []createCase[*corev1.Node]{
		{name: "valid"},
		{name: "pod CIDR", mutate: func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.1.0" }, want: []problem{inv("spec.podCIDR")}},
		{name: "taint effect", mutate: func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: "Never"}} }, want: []problem{nsup("spec.taints[0].effect")}},
	})
	runUpdate(t, Node, defaults.Node, node, []updateCase[*corev1.Node]{
		{name: "pod CIDR fixed", mutate: func(n *corev1.Node) { n.Spec.PodCIDR = "10.244.2.0/24" }, want: []problem{forb("spec.podCIDR")}},
	})
	runCreate(t, PersistentVolume, defaults.PersistentVolume, newPV, []createCase[*corev1.PersistentVolume]{
		{name: "valid"},
		{name: "capacity required", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil }, want: []problem{req("spec.capacity")}},
		{name: "access modes required", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil }, want: []problem{req("spec.accessModes")}},
		{name: "source required", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.HostPath = nil }, want: []problem{req("spec")}},
		{name: "claimRef names a claim", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim"}
		},
			want: []problem{req("spec.claimRef.name"), req("spec.claimRef.namespace")}},
		{name: "local path", mutate: func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath = nil
			pv.Spec.Local = &corev1.LocalVolumeSource{}
		}, want: []problem{req("spec.local.path")}},
		{name: "class name", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = "Fast_Disk" }, want: []problem{inv("spec.storageClassName")}},
		{name: "reclaim policy", mutate: func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Shred" },
			want: []problem{nsup("spec.persistentVolumeReclaimPolicy")}},
	})
	sc := func() *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: "minik8s.io/hostpath-shared"}
	}
	runCreate(t, StorageClass, defaults.StorageClass, sc, []createCase[*storagev1.StorageClass]{
		{name: "valid"},
		{name: "provisioner required", mutate: func(s *storagev1.StorageClass) { s.Provisioner = "" }, want: []problem{req("provisioner")}},
		{name: "provisioner name", mutate: func(s *storagev1.StorageClass) { s.Provisioner = "a b" }, want: []problem{inv("provisioner")}},
		{name: "no recycling", mutate: func(s *storagev1.StorageClass) { s.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimRecycle) },
			want: []problem{nsup("reclaimPolicy")}},
		{name: "binding mode", mutate: func(s *storagev1.StorageClass) { s.VolumeBindingMode = ptr(storagev1.VolumeBindingMode("Later")) },
			want: []problem{nsup("volumeBindingMode")}},
	})
	runUpdate(t, StorageClass, defaults.StorageClass, sc, []updateCase[*storagev1.StorageClass]{
		{name: "default annotation", mutate: func(s *storagev1.StorageClass) {
			s.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}},
		{name: "provisioner fixed", mutate: func(s *storagev1.StorageClass) { s.Provisioner = "example.com/other" }, want: []problem{forb("provisioner")}},
		{name: "reclaim fixed", mutate: func(s *storagev1.StorageClass) { s.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimRetain) }, want: []problem{inv("reclaimPolicy")}},
		{name: "parameters fixed", mutate: func(s *storagev1.StorageClass) { s.Parameters = map[string]string{"a": "b"} }, want: []problem{forb("parameters")}},
	})
}

func TestConfigAndSecret(t *testing.T) {
	cm := func() *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"app.conf": "x"}}
	}
	runCreate(t, ConfigMap, nil, cm, []createCase[*corev1.ConfigMap]{
		{name: "valid"},
		{name: "bad key", mutate: func(c *corev1.ConfigMap) { c.Data["a/b"] = "" }, want: []problem{inv("data[a/b]")}},
		{name: "too large", mutate: func(c *corev1.ConfigMap) { c.Data["big"] = strings.Repeat("x", 1<<20) }, want: []problem{long("data")}},
	})
	immutable := func() *corev1.ConfigMap { c := cm(); c.Immutable = ptr(true); return c }
	runUpdate(t, ConfigMap, nil, immutable, []updateCase[*corev1.ConfigMap]{
		{name: "data frozen", mutate: func(c *corev1.ConfigMap) { c.Data["app.conf"] = "y" }, want: []problem{forb("data")}},
	})
	secret := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: meta("tls"), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}
	}
	runCreate(t, Secret, defaults.Secret, secret, []createCase[*corev1.Secret]{
		{name: "valid"},
		{name: "tls key required", mutate: func(s *corev1.Secret) { delete(s.Data, "tls.key") }, want: []problem{req("data[tls.key]")}},
		{name: "opaque by default", mutate: func(s *corev1.Secret) { s.Type = "" }},
	})
	runUpdate(t, Secret, defaults.Secret, secret, []updateCase[*corev1.Secret]{
		{name: "type immutable", mutate: func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }, want: []problem{inv("type")}},
	})
}

func TestOtherNamespaced(t *testing.T) {
	runCreate(t, PersistentVolumeClaim, defaults.PersistentVolumeClaim, newPVC, []createCase[*corev1.PersistentVolumeClaim]{
		{name: "valid"},
		{name: "storage required", mutate: func(p *corev1.PersistentVolumeClaim) { p.Spec.Resources.Requests = nil }, want: []problem{req("spec.resources[storage]")}},
		{name: "access mode", mutate: func(p *corev1.PersistentVolumeClaim) {
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		},
			want: []problem{nsup("spec.accessModes")}},
	})
	runUpdate(t, PersistentVolumeClaim, defaults.PersistentVolumeClaim, newPVC, []updateCase[*corev1.PersistentVolumeClaim]{
		{name: "grow", mutate: func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}},
		{name: "shrink", mutate: func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1Mi")
		},
			want: []problem{forb("spec.resources.requests.storage")}},
		{name: "access modes fixed", mutate: func(p *corev1.PersistentVolumeClaim) {
			p.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		},
			want: []problem{forb("spec")}},
		{name: "default class assigned", mutate: func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = ptr("standard") }},
		{name: "volume name set once", mutate: func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "pv1" }},
	})
	classed := func() *corev1.PersistentVolumeClaim { p := newPVC(); p.Spec.StorageClassName = ptr("fast"); return p }
	runUpdate(t, PersistentVolumeClaim, defaults.PersistentVolumeClaim, classed, []updateCase[*corev1.PersistentVolumeClaim]{
		{name: "class fixed", mutate: func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = ptr("slow") }, want: []problem{forb("spec")}},
	})
	runCreate(t, PersistentVolumeClaim, defaults.PersistentVolumeClaim, newPVC, []createCase[*corev1.PersistentVolumeClaim]{
		{name: "class name", mutate: func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = ptr("Fast_Disk") }, want: []problem{inv("spec.storageClassName")}},
		{name: "no class", mutate: func(p *corev1.PersistentVolumeClaim) { p.Spec.StorageClassName = ptr("") }},
		{name: "selector", mutate: func(p *corev1.PersistentVolumeClaim) {
			p.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}
		}, want: []problem{inv("spec.selector.matchExpressions[0].operator")}},
	})
	path0 := func(i *networkingv1.Ingress) *networkingv1.HTTPIngressPath { return &i.Spec.Rules[0].HTTP.Paths[0] }
	runCreate(t, Ingress, nil, newIngress, []createCase[*networkingv1.Ingress]{
		{name: "valid"},
		{name: "pathType required", mutate: func(i *networkingv1.Ingress) { path0(i).PathType = nil }, want: []problem{req("spec.rules[0].http.paths[0].pathType")}},
		{name: "pathType enum", mutate: func(i *networkingv1.Ingress) { path0(i).PathType = ptr(networkingv1.PathType("Regex")) },
			want: []problem{nsup("spec.rules[0].http.paths[0].pathType")}},
		{name: "relative path", mutate: func(i *networkingv1.Ingress) { path0(i).Path = "api" }, want: []problem{inv("spec.rules[0].http.paths[0].path")}},
		{name: "backend port", mutate: func(i *networkingv1.Ingress) { path0(i).Backend.Service.Port = networkingv1.ServiceBackendPort{} },
			want: []problem{req("spec.rules[0].http.paths[0].backend.service.port")}},
		{name: "ip host", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules[0].Host = "10.0.0.1" }, want: []problem{inv("spec.rules[0].host")}},
		{name: "nothing routed", mutate: func(i *networkingv1.Ingress) { i.Spec.Rules = nil }, want: []problem{inv("spec")}},
	})
	runCreate(t, Lease, nil, newLease, []createCase[*coordinationv1.Lease]{
		{name: "valid"},
		{name: "duration", mutate: func(l *coordinationv1.Lease) { l.Spec.LeaseDurationSeconds = ptr(int32(0)) }, want: []problem{inv("spec.leaseDurationSeconds")}},
	})
}
