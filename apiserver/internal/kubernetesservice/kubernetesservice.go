package kubernetesservice

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"minik8s.io/apiserver/internal/registry"
	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

const (
	// Name and Namespace of the Service, its Endpoints and its EndpointSlice.
	Name      = "kubernetes"
	Namespace = metav1.NamespaceDefault
	// PortName and Port are what pods dial.
	PortName = "https"
	Port     = 443

	// LeaseNamespace holds one Lease per apiserver, as Kubernetes' apiserver identity leases.
	LeaseNamespace = metav1.NamespaceSystem
	// IdentityLabel marks the apiservers' Leases.
	IdentityLabel = "apiserver.kubernetes.io/identity"
	identityValue = "kube-apiserver"
	// EndpointAnnotation is where an apiserver's Lease says the address it serves at.
	EndpointAnnotation = "minik8s.io/endpoint"

	// DefaultInterval spaces renewals and endpoint passes; DefaultLeaseDuration is how long
	// an apiserver that stopped renewing stays an endpoint.
	DefaultInterval      = 10 * time.Second
	DefaultLeaseDuration = 40 * time.Second
)

// Config is what a Reconciler needs.
type Config struct {
	Registry *registry.Registry
	// Endpoint is where this apiserver serves, as pods reach it: never a loopback address.
	Endpoint netip.AddrPort
	// ClusterIP is the Service's address: the first of the service range.
	ClusterIP     netip.Addr
	Interval      time.Duration
	LeaseDuration time.Duration
	Now           func() time.Time
	Logger        *slog.Logger
}

// Reconciler keeps the kubernetes Service and its endpoints. Build it with New.
type Reconciler struct {
	cfg                        Config
	svc, eps, slices, leaseRes *scheme.Resource
	leaseName                  string
}

// New builds a Reconciler; it starts nothing.
func New(cfg Config) *Reconciler {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	lookup := func(plural string) *scheme.Resource {
		res, err := scheme.Lookup(plural)
		if err != nil {
			panic(err)
		}
		return res
	}
	sum := sha256.Sum256([]byte(cfg.Endpoint.String()))
	return &Reconciler{cfg: cfg, svc: lookup("services"), eps: lookup("endpoints"), slices: lookup("endpointslices"),
		leaseRes: lookup("leases"), leaseName: "apiserver-" + hex.EncodeToString(sum[:])[:16]}
}

// Start reconciles every Interval until ctx ends, then takes this apiserver out of the
// endpoints so clients stop being sent to it.
func (r *Reconciler) Start(ctx context.Context) error {
	if !r.cfg.Endpoint.Addr().IsValid() || r.cfg.Endpoint.Addr().IsLoopback() {
		// Pods cannot reach a loopback address: the Service is kept, with no endpoints from here.
		r.cfg.Logger.Warn("the kubernetes Service gets no endpoint from this apiserver: its advertised address is loopback; set --advertise-address", "address", r.cfg.Endpoint)
	}
	failures := 0
	for {
		wait := r.cfg.Interval
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			// At start the default namespace may not be made yet: try again soon, and say so
			// only when it goes on.
			if failures++; failures > 3 {
				r.cfg.Logger.Warn("reconciling the kubernetes Service", "err", err)
			}
			wait = time.Second
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := r.Leave(stop); err != nil {
				r.cfg.Logger.Warn("removing this apiserver from the kubernetes endpoints", "err", err)
			}
			return nil
		case <-time.After(wait):
		}
	}
}

// Sync makes sure of the Service, renews this apiserver's Lease and writes the endpoints of
// every apiserver whose Lease is current.
func (r *Reconciler) Sync(ctx context.Context) error {
	if err := r.ensureService(ctx); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if r.reachable() {
		if err := r.renew(ctx); err != nil {
			return fmt.Errorf("lease: %w", err)
		}
	}
	return r.writeEndpoints(ctx)
}

// Leave deletes this apiserver's Lease and rewrites the endpoints without it.
func (r *Reconciler) Leave(ctx context.Context) error {
	_, err := r.cfg.Registry.Delete(ctx, registry.Key{Resource: r.leaseRes, Namespace: LeaseNamespace, Name: r.leaseName}, nil)
	if err != nil && !errors.Is(err, apierror.ErrNotFound) {
		return err
	}
	return r.writeEndpoints(ctx)
}

func (r *Reconciler) reachable() bool {
	a := r.cfg.Endpoint.Addr()
	return a.IsValid() && !a.IsLoopback() && !a.IsUnspecified()
}

// DesiredService is the kubernetes Service, as Kubernetes' apiserver makes it.
func DesiredService(clusterIP netip.Addr, targetPort uint16) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type:            corev1.ServiceTypeClusterIP,
			ClusterIP:       clusterIP.String(),
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: PortName, Protocol: corev1.ProtocolTCP, Port: Port,
				TargetPort: intstr.FromInt32(int32(targetPort))}},
		},
	}
}

func (r *Reconciler) ensureService(ctx context.Context) error {
	want := DesiredService(r.cfg.ClusterIP, r.cfg.Endpoint.Port())
	key := registry.Key{Resource: r.svc, Namespace: Namespace, Name: Name}
	_, err := r.cfg.Registry.Create(ctx, registry.Key{Resource: r.svc, Namespace: Namespace}, want, false)
	if err == nil || !errors.Is(err, apierror.ErrAlreadyExists) {
		return err
	}
	// It exists: put its ports back if someone changed them, as Kubernetes does.
	_, err = r.cfg.Registry.Update(ctx, key, registry.UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
		svc := cur.(*corev1.Service)
		if equality.Semantic.DeepEqual(svc.Spec.Ports, want.Spec.Ports) {
			return nil, "", errUnchanged
		}
		svc.Spec.Ports = want.Spec.Ports
		return svc, "", nil
	})
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

var errUnchanged = errors.New("unchanged")

func (r *Reconciler) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(r.cfg.Now())
	secs := int32(r.cfg.LeaseDuration / time.Second)
	holder := r.leaseName
	key := registry.Key{Resource: r.leaseRes, Namespace: LeaseNamespace, Name: r.leaseName}
	_, err := r.cfg.Registry.Update(ctx, key, registry.UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
		l := cur.(*coordinationv1.Lease)
		l.Spec.RenewTime, l.Spec.LeaseDurationSeconds, l.Spec.HolderIdentity = &now, &secs, &holder
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[EndpointAnnotation] = r.cfg.Endpoint.String()
		return l, "", nil
	})
	if !errors.Is(err, apierror.ErrNotFound) {
		return err
	}
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: r.leaseName, Namespace: LeaseNamespace,
			Labels:      map[string]string{IdentityLabel: identityValue},
			Annotations: map[string]string{EndpointAnnotation: r.cfg.Endpoint.String()}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	_, err = r.cfg.Registry.Create(ctx, registry.Key{Resource: r.leaseRes, Namespace: LeaseNamespace}, l, false)
	return err
}

// liveEndpoints lists the apiservers whose Lease is current, in a stable order.
func (r *Reconciler) liveEndpoints(ctx context.Context) ([]netip.AddrPort, error) {
	sel := registry.Selectors{Labels: labels.SelectorFromSet(labels.Set{IdentityLabel: identityValue})}
	list, err := r.cfg.Registry.List(ctx, registry.Key{Resource: r.leaseRes, Namespace: LeaseNamespace}, registry.ListOptions{Selectors: sel})
	if err != nil {
		return nil, err
	}
	leases := make([]*coordinationv1.Lease, 0, len(list.Items))
	for _, o := range list.Items {
		leases = append(leases, o.(*coordinationv1.Lease))
	}
	return Live(leases, r.cfg.Now()), nil
}

// Live picks the endpoints of the Leases renewed within their duration, sorted, each once.
func Live(leases []*coordinationv1.Lease, now time.Time) []netip.AddrPort {
	var out []netip.AddrPort
	for _, l := range leases {
		if l.DeletionTimestamp != nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		if !now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)) {
			continue
		}
		ap, err := netip.ParseAddrPort(l.Annotations[EndpointAnnotation])
		if err != nil || ap.Addr().IsLoopback() || ap.Addr().IsUnspecified() {
			continue
		}
		if !slices.Contains(out, ap) {
			out = append(out, ap)
		}
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return out
}

// DesiredEndpoints are the Endpoints of the Service for these apiservers: one subset per port.
func DesiredEndpoints(live []netip.AddrPort) *corev1.Endpoints {
	eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace,
		Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}}}
	for _, ap := range live {
		i := slices.IndexFunc(eps.Subsets, func(s corev1.EndpointSubset) bool { return s.Ports[0].Port == int32(ap.Port()) })
		if i < 0 {
			eps.Subsets = append(eps.Subsets, corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: PortName, Port: int32(ap.Port()), Protocol: corev1.ProtocolTCP}}})
			i = len(eps.Subsets) - 1
		}
		eps.Subsets[i].Addresses = append(eps.Subsets[i].Addresses, corev1.EndpointAddress{IP: ap.Addr().String()})
	}
	return eps
}

// DesiredSlice is the EndpointSlice of the Service for these apiservers, which all serve on
// one port (the first one's, as Kubernetes requires of the kubernetes Service's endpoints).
func DesiredSlice(live []netip.AddrPort) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	if len(live) == 0 {
		return s
	}
	port, name, proto, ready := int32(live[0].Port()), PortName, corev1.ProtocolTCP, true
	s.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}
	for _, ap := range live {
		if int32(ap.Port()) == port {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ap.Addr().String()},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
	}
	return s
}

func (r *Reconciler) writeEndpoints(ctx context.Context) error {
	live, err := r.liveEndpoints(ctx)
	if err != nil {
		return fmt.Errorf("list apiserver leases: %w", err)
	}
	eps := DesiredEndpoints(live)
	if err := r.put(ctx, r.eps, eps, func(cur runtime.Object) bool {
		c := cur.(*corev1.Endpoints)
		if equality.Semantic.DeepEqual(c.Subsets, eps.Subsets) && equality.Semantic.DeepEqual(c.Labels, eps.Labels) {
			return false
		}
		c.Subsets, c.Labels = eps.Subsets, eps.Labels
		return true
	}); err != nil {
		return fmt.Errorf("endpoints: %w", err)
	}
	slice := DesiredSlice(live)
	if err := r.put(ctx, r.slices, slice, func(cur runtime.Object) bool {
		c := cur.(*discoveryv1.EndpointSlice)
		if equality.Semantic.DeepEqual(c.Endpoints, slice.Endpoints) && equality.Semantic.DeepEqual(c.Ports, slice.Ports) &&
			equality.Semantic.DeepEqual(c.Labels, slice.Labels) {
			return false
		}
		c.Endpoints, c.Ports, c.Labels = slice.Endpoints, slice.Ports, slice.Labels
		return true
	}); err != nil {
		return fmt.Errorf("endpointslice: %w", err)
	}
	return nil
}

// put creates obj, or brings the existing object in line with set (which reports a change).
func (r *Reconciler) put(ctx context.Context, res *scheme.Resource, obj runtime.Object, set func(cur runtime.Object) bool) error {
	key := registry.Key{Resource: res, Namespace: Namespace, Name: Name}
	_, err := r.cfg.Registry.Update(ctx, key, registry.UpdateOptions{}, func(cur runtime.Object, _ storage.KV) (runtime.Object, string, error) {
		if !set(cur) {
			return nil, "", errUnchanged
		}
		return cur, "", nil
	})
	switch {
	case errors.Is(err, errUnchanged):
		return nil
	case errors.Is(err, apierror.ErrNotFound):
		_, err = r.cfg.Registry.Create(ctx, registry.Key{Resource: res, Namespace: Namespace}, obj, false)
		if errors.Is(err, apierror.ErrAlreadyExists) {
			return nil // another apiserver made it; the next pass checks it
		}
	}
	return err
}
