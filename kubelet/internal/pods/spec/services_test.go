package spec

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func service(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

var kubernetesService = service("default", "kubernetes", "10.96.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})

// masterEnv is what every container gets about the kubernetes Service.
var masterEnv = map[string]string{
	"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
	"KUBERNETES_SERVICE_PORT":       "443",
	"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_443_TCP_PORT":  "443",
	"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
}

func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestServiceEnv(t *testing.T) {
	web := service("shop", "web-front", "10.96.3.4",
		corev1.ServicePort{Port: 80},
		corev1.ServicePort{Name: "metrics", Port: 9090, Protocol: corev1.ProtocolUDP})
	webEnv := map[string]string{
		"WEB_FRONT_SERVICE_HOST":         "10.96.3.4",
		"WEB_FRONT_SERVICE_PORT":         "80",
		"WEB_FRONT_SERVICE_PORT_METRICS": "9090",
		"WEB_FRONT_PORT":                 "tcp://10.96.3.4:80",
		"WEB_FRONT_PORT_80_TCP":          "tcp://10.96.3.4:80",
		"WEB_FRONT_PORT_80_TCP_PROTO":    "tcp",
		"WEB_FRONT_PORT_80_TCP_PORT":     "80",
		"WEB_FRONT_PORT_80_TCP_ADDR":     "10.96.3.4",
		"WEB_FRONT_PORT_9090_UDP":        "udp://10.96.3.4:9090",
		"WEB_FRONT_PORT_9090_UDP_PROTO":  "udp",
		"WEB_FRONT_PORT_9090_UDP_PORT":   "9090",
		"WEB_FRONT_PORT_9090_UDP_ADDR":   "10.96.3.4",
	}
	ownKubernetes := service("shop", "kubernetes", "10.96.7.7", corev1.ServicePort{Port: 8080})
	tests := []struct {
		name      string
		services  []*corev1.Service
		namespace string
		links     bool
		want      map[string]string
	}{
		{"the kubernetes Service alone", []*corev1.Service{kubernetesService}, "shop", true, masterEnv},
		{"the kubernetes Service even without service links", []*corev1.Service{kubernetesService, web}, "shop", false, masterEnv},
		{"the pod's namespace's Services with links", []*corev1.Service{kubernetesService, web}, "shop", true, merged(masterEnv, webEnv)},
		{"not other namespaces' Services", []*corev1.Service{kubernetesService, web}, "other", true, masterEnv},
		{"not the default namespace's other Services", []*corev1.Service{kubernetesService, service("default", "db", "10.96.0.9", corev1.ServicePort{Port: 5432})}, "shop", true, masterEnv},
		{"the default namespace's own Services for its pods", []*corev1.Service{kubernetesService, service("default", "db", "10.96.0.9", corev1.ServicePort{Port: 5432})}, "default", true,
			merged(masterEnv, map[string]string{
				"DB_SERVICE_HOST": "10.96.0.9", "DB_SERVICE_PORT": "5432", "DB_PORT": "tcp://10.96.0.9:5432",
				"DB_PORT_5432_TCP": "tcp://10.96.0.9:5432", "DB_PORT_5432_TCP_PROTO": "tcp", "DB_PORT_5432_TCP_PORT": "5432", "DB_PORT_5432_TCP_ADDR": "10.96.0.9",
			})},
		{"no headless Services", []*corev1.Service{kubernetesService, service("shop", "db", "None", corev1.ServicePort{Port: 5432}), service("shop", "pending", "", corev1.ServicePort{Port: 1})}, "shop", true, masterEnv},
		{"a linked namesake in the pod's namespace wins, listed after", []*corev1.Service{kubernetesService, ownKubernetes}, "shop", true, ownKubernetesEnv},
		{"a linked namesake in the pod's namespace wins, listed before", []*corev1.Service{ownKubernetes, kubernetesService}, "shop", true, ownKubernetesEnv},
		{"no Services, no variables", nil, "shop", true, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, ServiceEnv(tt.services, tt.namespace, tt.links)); d != "" {
				t.Errorf("ServiceEnv (-want +got):\n%s", d)
			}
		})
	}
}

var ownKubernetesEnv = map[string]string{
	"KUBERNETES_SERVICE_HOST":        "10.96.7.7",
	"KUBERNETES_SERVICE_PORT":        "8080",
	"KUBERNETES_PORT":                "tcp://10.96.7.7:8080",
	"KUBERNETES_PORT_8080_TCP":       "tcp://10.96.7.7:8080",
	"KUBERNETES_PORT_8080_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_8080_TCP_PORT":  "8080",
	"KUBERNETES_PORT_8080_TCP_ADDR":  "10.96.7.7",
}

type services struct {
	list []*corev1.Service
	err  error
}

func (s services) List() ([]*corev1.Service, error) { return s.list, s.err }

func TestContainerServiceEnv(t *testing.T) {
	tests := []struct {
		name   string
		env    []corev1.EnvVar
		links  *bool
		lister ServiceLister
		want   []string
		err    string
	}{
		{
			name:   "service variables follow the container's own, in name order",
			env:    []corev1.EnvVar{{Name: "A", Value: "1"}},
			lister: services{list: []*corev1.Service{kubernetesService}},
			want: []string{"A=1",
				"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
				"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_SERVICE_HOST=10.96.0.1",
				"KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443"},
		},
		{
			name: "the container's own value wins and values may refer to service variables",
			env: []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "api.example"},
				{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"}},
			links:  ptr(false),
			lister: services{list: []*corev1.Service{kubernetesService, service("default", "db", "10.96.0.9", corev1.ServicePort{Port: 5432})}},
			want: []string{"KUBERNETES_SERVICE_HOST=api.example", "URL=https://api.example:443",
				"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
				"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_PROTO=tcp",
				"KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443"},
		},
		{
			name:   "services not read yet fail the container",
			lister: services{err: errors.New("services cache not synced")},
			err:    "services have not yet been read at least once, cannot construct envvars: services cache not synced",
		},
		{
			name: "resources from resourceFieldRef",
			env: []corev1.EnvVar{
				{Name: "CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1m")}}},
				{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: resource.MustParse("1Ki")}}},
				{Name: "OTHER_CPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "sidecar", Resource: "limits.cpu"}}},
			},
			want: []string{"CPU=250", "MEM=1", "OTHER_CPU=4"},
		},
		{
			name: "an unsupported resource",
			env:  []corev1.EnvVar{{Name: "GPU", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.nvidia.com/gpu"}}}},
			err:  "env GPU: unsupported container resource : limits.nvidia.com/gpu",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pod()
			p.Spec.EnableServiceLinks = tt.links
			p.Spec.Containers[0].Env = tt.env
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1000")},
			}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sidecar"})
			b := Builder{Services: tt.lister, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
			got, err := b.Container(t.Context(), p, &p.Spec.Containers[0], "sb", 0, Env{}, nil)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Container: err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got.Env); d != "" {
				t.Errorf("env (-want +got):\n%s", d)
			}
		})
	}
}
