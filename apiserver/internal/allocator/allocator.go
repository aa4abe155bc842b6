package allocator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/storage"
	"minik8s.io/shared/apierror"
)

// Service address ranges, as in a default Kubernetes cluster.
var (
	ServiceCIDR   = netip.MustParsePrefix("10.96.0.0/12")
	NodePortFirst = 30000
	NodePortLast  = 32767
)

// KubernetesServiceIP is the kubernetes Service's address: the first of ServiceCIDR, which
// the allocator never hands out.
func KubernetesServiceIP() netip.Addr { return ServiceCIDR.Addr().Next() }

const (
	allocPrefix    = "/minik8s/allocations/"
	serviceIPKeys  = allocPrefix + "serviceips/"
	nodePortKeys   = allocPrefix + "nodeports/"
	podCIDRKeys    = allocPrefix + "podcidrs/"
	allocAttempts  = 64
	reservedOffset = 1 // 10.96.0.1 belongs to the kubernetes Service
)

// Allocator hands out Service cluster IPs, node ports and pod CIDRs. Build it with New.
type Allocator struct {
	store storage.Interface
	// podCIDRs is split into one /podCIDRBits block per node.
	podCIDRs    netip.Prefix
	podCIDRBits int

	mu sync.Mutex
	// nextBlock is where the next pod CIDR search starts: after the last block handed out, so
	// registering many nodes does not rescan the taken ones each time.
	nextBlock int
}

// New builds an allocator over store; podCIDRs is split into one /podCIDRBits block per node
// (the default pod network when podCIDRs is not valid).
func New(store storage.Interface, podCIDRs netip.Prefix, podCIDRBits int) *Allocator {
	if !podCIDRs.IsValid() {
		podCIDRs, podCIDRBits = DefaultPodCIDRRange, DefaultPodCIDRBits
	}
	return &Allocator{store: store, podCIDRs: podCIDRs, podCIDRBits: podCIDRBits}
}

func owner(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

// reserve takes key for svc; a key svc already owns (left by an interrupted earlier attempt)
// counts as taken by it.
func (a *Allocator) reserve(ctx context.Context, key string, svc metav1.Object) (bool, error) {
	_, err := a.store.Create(ctx, key, []byte(owner(svc)))
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, storage.ErrKeyExists) {
		return false, apierror.New(apierror.ErrUnavailable, "storage error reserving %s: %v", key, err)
	}
	kv, err := a.store.Get(ctx, key)
	if err == nil && string(kv.Value) == owner(svc) {
		return true, nil
	}
	return false, nil
}

func (a *Allocator) free(ctx context.Context, keys []string) {
	for _, k := range keys {
		_, _, _ = a.store.Delete(ctx, k, 0)
	}
}

func ipKey(ip string) string { return serviceIPKeys + ip }
func portKey(p int32) string { return nodePortKeys + strconv.Itoa(int(p)) }

// serviceKeys lists the allocation keys a service's spec occupies.
func serviceKeys(svc *corev1.Service) []string {
	if svc == nil {
		return nil
	}
	var keys []string
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		keys = append(keys, ipKey(ip))
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			keys = append(keys, portKey(p.NodePort))
		}
	}
	return keys
}

func invalidService(svc *corev1.Service, path *field.Path, value any, msg string) error {
	return apierror.Invalid("", "Service", svc.Name, field.ErrorList{field.Invalid(path, value, msg)})
}

// heldKeys lists the allocation keys an object occupies.
func heldKeys(obj runtime.Object) []string {
	switch o := obj.(type) {
	case *corev1.Service:
		return serviceKeys(o)
	case *corev1.Node:
		if o.Spec.PodCIDR != "" {
			return []string{podCIDRKey(o.Spec.PodCIDR)}
		}
	}
	return nil
}

// Allocate fills in and reserves the addresses obj needs beyond what old (nil on create)
// holds. undo releases what this call reserved, for when the write does not happen.
func (a *Allocator) Allocate(ctx context.Context, old, obj runtime.Object) (undo func(), err error) {
	switch o := obj.(type) {
	case *corev1.Service:
		oldSvc, _ := old.(*corev1.Service)
		return a.allocateService(ctx, oldSvc, o)
	case *corev1.Node:
		oldNode, _ := old.(*corev1.Node)
		return a.allocatePodCIDR(ctx, oldNode, o)
	}
	return func() {}, nil
}

func (a *Allocator) allocateService(ctx context.Context, old, svc *corev1.Service) (undo func(), err error) {
	held := map[string]bool{}
	for _, k := range serviceKeys(old) {
		held[k] = true
	}
	var taken []string
	undo = func() { a.free(context.WithoutCancel(ctx), taken) }
	defer func() {
		if err != nil {
			undo()
		}
	}()
	spec := &svc.Spec
	if spec.Type != corev1.ServiceTypeExternalName && spec.ClusterIP != corev1.ClusterIPNone {
		if spec.ClusterIP == "" && len(spec.ClusterIPs) > 0 {
			spec.ClusterIP = spec.ClusterIPs[0]
		}
		switch {
		case spec.ClusterIP == "":
			ip, err := a.randomIP(ctx, svc)
			if err != nil {
				return undo, err
			}
			taken = append(taken, ipKey(ip))
			spec.ClusterIP = ip
		case !held[ipKey(spec.ClusterIP)]:
			addr, perr := netip.ParseAddr(spec.ClusterIP)
			path := field.NewPath("spec", "clusterIPs").Index(0)
			if perr != nil || !ServiceCIDR.Contains(addr) {
				return undo, invalidService(svc, path, spec.ClusterIP, "provided IP is not in the valid range. The range of valid IPs is "+ServiceCIDR.String())
			}
			ok, err := a.reserve(ctx, ipKey(spec.ClusterIP), svc)
			if err != nil {
				return undo, err
			}
			if !ok {
				return undo, invalidService(svc, path, spec.ClusterIP, "provided IP is already allocated")
			}
			taken = append(taken, ipKey(spec.ClusterIP))
		}
		spec.ClusterIPs = []string{spec.ClusterIP}
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
	}
	if spec.Type != corev1.ServiceTypeNodePort && spec.Type != corev1.ServiceTypeLoadBalancer {
		return undo, nil
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		switch {
		case p.NodePort == 0:
			port, err := a.randomPort(ctx, svc)
			if err != nil {
				return undo, err
			}
			taken = append(taken, portKey(port))
			p.NodePort = port
		case !held[portKey(p.NodePort)]:
			path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
			if int(p.NodePort) < NodePortFirst || int(p.NodePort) > NodePortLast {
				return undo, invalidService(svc, path, p.NodePort, fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", NodePortFirst, NodePortLast))
			}
			ok, err := a.reserve(ctx, portKey(p.NodePort), svc)
			if err != nil {
				return undo, err
			}
			if !ok {
				return undo, invalidService(svc, path, p.NodePort, "provided port is already allocated")
			}
			taken = append(taken, portKey(p.NodePort))
		}
	}
	return undo, nil
}

func (a *Allocator) randomIP(ctx context.Context, svc *corev1.Service) (string, error) {
	base := ServiceCIDR.Addr().As4()
	size := uint32(1) << (32 - ServiceCIDR.Bits())
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	for i := 0; i < allocAttempts; i++ {
		// Skip the network address, the reserved first host and the broadcast address.
		n := start + reservedOffset + 1 + rand.Uint32N(size-reservedOffset-2)
		ip := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}).String()
		ok, err := a.reserve(ctx, ipKey(ip), svc)
		if err != nil {
			return "", err
		}
		if ok {
			return ip, nil
		}
	}
	return "", apierror.New(apierror.ErrInternal, "failed to allocate a service IP: range %s is full", ServiceCIDR)
}

func (a *Allocator) randomPort(ctx context.Context, svc *corev1.Service) (int32, error) {
	for i := 0; i < allocAttempts; i++ {
		p := int32(NodePortFirst + rand.IntN(NodePortLast-NodePortFirst+1))
		ok, err := a.reserve(ctx, portKey(p), svc)
		if err != nil {
			return 0, err
		}
		if ok {
			return p, nil
		}
	}
	return 0, apierror.New(apierror.ErrInternal, "failed to allocate a node port: range %d-%d is full", NodePortFirst, NodePortLast)
}

// Release frees what old held and obj (nil when deleted) no longer does.
func (a *Allocator) Release(ctx context.Context, old, obj runtime.Object) {
	keep := map[string]bool{}
	for _, k := range heldKeys(obj) {
		keep[k] = true
	}
	var drop []string
	for _, k := range heldKeys(old) {
		if !keep[k] {
			drop = append(drop, k)
		}
	}
	a.free(context.WithoutCancel(ctx), drop)
}

// RepairAge is how old a reservation no object holds must be before Repair frees it: far
// longer than any write takes between reserving and storing its object.
const RepairAge = 5 * time.Minute

// Repair makes the allocation keys match holders, every Service and Node as stored: it frees
// keys no object holds that were written at or before revision before (left by a crash between
// reserving and writing; younger ones may belong to a write in flight), and reserves what
// objects hold without a key.
func (a *Allocator) Repair(ctx context.Context, holders []runtime.Object, before int64) error {
	want := map[string]string{}
	for _, item := range holders {
		m, err := meta.Accessor(item)
		if err != nil {
			return err
		}
		for _, k := range heldKeys(item) {
			want[k] = owner(m)
		}
	}
	page, err := a.store.List(ctx, allocPrefix, "", 0, 0)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, kv := range page.KVs {
		if want[kv.Key] == string(kv.Value) {
			have[kv.Key] = true
			continue
		}
		if kv.ModRevision <= before {
			_, _, _ = a.store.Delete(ctx, kv.Key, kv.ModRevision)
		}
	}
	for k, o := range want {
		if !have[k] && strings.HasPrefix(k, allocPrefix) {
			_, _ = a.store.Create(ctx, k, []byte(o))
		}
	}
	return nil
}

// Default pod network: 10.244.0.0/16, one /24 per node, as a default Kubernetes cluster.
var (
	DefaultPodCIDRRange = netip.MustParsePrefix("10.244.0.0/16")
	DefaultPodCIDRBits  = 24
)

func podCIDRKey(cidr string) string { return podCIDRKeys + strings.ReplaceAll(cidr, "/", "_") }

// allocatePodCIDR gives a new node the next free block of the pod network (the lowest, on a
// fresh cluster). A node keeps its
// block for life; an update that leaves podCIDR out keeps the old one.
func (a *Allocator) allocatePodCIDR(ctx context.Context, old, node *corev1.Node) (undo func(), err error) {
	noop := func() {}
	if old != nil {
		if node.Spec.PodCIDR == "" {
			node.Spec.PodCIDR, node.Spec.PodCIDRs = old.Spec.PodCIDR, old.Spec.PodCIDRs
		}
		return noop, nil
	}
	path := field.NewPath("spec", "podCIDR")
	if node.Spec.PodCIDR != "" {
		p, perr := netip.ParsePrefix(node.Spec.PodCIDR)
		if perr != nil || p.Bits() != a.podCIDRBits || !a.podCIDRs.Contains(p.Addr()) || p.Masked() != p {
			return noop, apierror.Invalid("", "Node", node.Name, field.ErrorList{field.Invalid(path, node.Spec.PodCIDR,
				fmt.Sprintf("must be a /%d block of %s", a.podCIDRBits, a.podCIDRs))})
		}
		ok, err := a.reserve(ctx, podCIDRKey(node.Spec.PodCIDR), node)
		if err != nil {
			return noop, err
		}
		if !ok {
			return noop, apierror.Invalid("", "Node", node.Name, field.ErrorList{field.Invalid(path, node.Spec.PodCIDR, "is already assigned to another node")})
		}
		node.Spec.PodCIDRs = []string{node.Spec.PodCIDR}
		return func() { a.free(context.WithoutCancel(ctx), []string{podCIDRKey(node.Spec.PodCIDR)}) }, nil
	}
	base := a.podCIDRs.Addr().As4()
	blocks := 1 << (a.podCIDRBits - a.podCIDRs.Bits())
	step := uint32(1) << (32 - a.podCIDRBits)
	start := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	a.mu.Lock()
	first := a.nextBlock
	a.mu.Unlock()
	for k := 0; k < blocks; k++ {
		i := (first + k) % blocks
		n := start + uint32(i)*step
		cidr := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), a.podCIDRBits).String()
		ok, err := a.reserve(ctx, podCIDRKey(cidr), node)
		if err != nil {
			return noop, err
		}
		if ok {
			a.mu.Lock()
			a.nextBlock = (i + 1) % blocks
			a.mu.Unlock()
			node.Spec.PodCIDR, node.Spec.PodCIDRs = cidr, []string{cidr}
			return func() { a.free(context.WithoutCancel(ctx), []string{podCIDRKey(cidr)}) }, nil
		}
	}
	return noop, apierror.New(apierror.ErrInternal, "no pod CIDR left in %s for node %s", a.podCIDRs, node.Name)
}
