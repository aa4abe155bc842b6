package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/kubelet/internal/nodestatus"
	"minik8s.io/shared/client"
	"minik8s.io/shared/informer"
	"minik8s.io/shared/scheme"
)

// DefaultServiceCIDR is the apiserver's Service range; its first address is the kubernetes
// Service's.
const DefaultServiceCIDR = "10.96.0.0/12"

// tokenTimeout bounds a TokenRequest: a pod's volumes wait for it.
const tokenTimeout = 30 * time.Second

// apiTokens requests ServiceAccount tokens with the kubelet's own credential, through the
// serviceaccounts/token subresource, as the kubelet's token manager does in Kubernetes.
type apiTokens struct {
	c   *client.Client
	sas *scheme.Resource
}

func newAPITokens(c *client.Client) apiTokens {
	return apiTokens{c: c, sas: client.MustFor[*corev1.ServiceAccount, *corev1.ServiceAccountList](c).Resource()}
}

func (a apiTokens) CreateToken(ctx context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	body := req.DeepCopy()
	body.TypeMeta = metav1.TypeMeta{APIVersion: authnv1.SchemeGroupVersion.String(), Kind: "TokenRequest"}
	out := &authnv1.TokenRequest{}
	if err := a.c.Post().Resource(a.sas, namespace, name, "token").Body(body).Into(ctx, out); err != nil {
		return nil, fmt.Errorf("request token of serviceaccount %s/%s: %w", namespace, name, err)
	}
	return out, nil
}

// serviceList lists Services from the kubelet's informer for containers' variables. Until
// the apiserver has created the kubernetes Service (or when the kubelet may not see it), the
// one it will create stands in, so that every container gets KUBERNETES_SERVICE_HOST.
type serviceList struct {
	synced func() bool
	store  *informer.Store
	master *corev1.Service
}

func newServiceList(inf *informer.Informer, master *corev1.Service) serviceList {
	return serviceList{synced: inf.HasSynced, store: inf.Store(), master: master}
}

func (s serviceList) List() ([]*corev1.Service, error) {
	if !s.synced() {
		return nil, errors.New("the services cache has not synced")
	}
	list, err := informer.NewLister[*corev1.Service](s.store).List(nil)
	if err != nil {
		return nil, err
	}
	for _, svc := range list {
		if svc.Namespace == metav1.NamespaceDefault && svc.Name == s.master.Name {
			return list, nil
		}
	}
	return append(list, s.master), nil
}

// masterService is the kubernetes Service as the apiserver makes it: the first address of
// the Service range, port 443 named https.
func masterService(serviceCIDR string) (*corev1.Service, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil || !p.Addr().Is4() {
		return nil, fmt.Errorf("--service-cidr %q is not an IPv4 prefix", serviceCIDR)
	}
	ip := p.Masked().Addr().Next()
	if !p.Contains(ip) {
		return nil, fmt.Errorf("--service-cidr %q has no address for the kubernetes Service", serviceCIDR)
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "kubernetes"},
		Spec: corev1.ServiceSpec{ClusterIP: ip.String(), Ports: []corev1.ServicePort{
			{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP},
		}},
	}, nil
}

// nodeAllocatable is the CPU and memory the node offers pods, as its Node reports them: what
// the downward API shows as the limits of containers that set none.
func nodeAllocatable(cfg nodestatus.Config, host nodestatus.LinuxHost) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(int64(host.CPU()), resource.DecimalSI)}
	if total, err := host.MemoryTotal(); err == nil {
		// The Node's allocatable memory keeps the memory-pressure threshold back.
		reserved := cmp.Or(cfg.MemoryPressureThreshold, nodestatus.DefaultMemoryPressureThreshold)
		out[corev1.ResourceMemory] = *resource.NewQuantity(max(total-reserved, 0), resource.BinarySI)
	}
	return out
}
