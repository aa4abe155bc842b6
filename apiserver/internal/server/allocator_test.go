package server

import (
	"net/http"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"minik8s.io/apiserver/internal/allocator"
	"minik8s.io/apiserver/internal/registry"
)

func serviceManifest(name, typ, clusterIP string, nodePort int) map[string]any {
	port := map[string]any{"port": 80}
	if nodePort != 0 {
		port["nodePort"] = nodePort
	}
	spec := map[string]any{"selector": map[string]any{"app": name}, "ports": []any{port}}
	if typ != "" {
		spec["type"] = typ
	}
	if clusterIP != "" {
		spec["clusterIP"] = clusterIP
	}
	return map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name}, "spec": spec}
}

func TestServiceAddressAllocation(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/services"

	var a corev1.Service
	h.mustDo(http.StatusCreated, "POST", base, "", serviceManifest("a", "", "", 0), &a)
	ip, err := netip.ParseAddr(a.Spec.ClusterIP)
	if err != nil || !allocator.ServiceCIDR.Contains(ip) || len(a.Spec.ClusterIPs) != 1 || a.Spec.ClusterIPs[0] != a.Spec.ClusterIP {
		t.Fatalf("allocated %q %v", a.Spec.ClusterIP, a.Spec.ClusterIPs)
	}

	// Asking for a taken address is rejected with the field named; nothing is stored.
	var st metav1.Status
	code, _ := h.do("POST", base, "", serviceManifest("b", "", a.Spec.ClusterIP, 0), &st)
	if code != 422 || st.Details == nil || st.Details.Causes[0].Field != "spec.clusterIPs[0]" {
		t.Fatalf("taken IP: %d %+v", code, st)
	}
	code, _ = h.do("POST", base, "", serviceManifest("b", "", "192.168.0.1", 0), &st)
	if code != 422 {
		t.Fatalf("IP outside the range: %d %+v", code, st)
	}
	if code, _ := h.do("GET", base+"/b", "", nil, nil); code != 404 {
		t.Fatalf("rejected service was stored: %d", code)
	}

	// NodePort services get a port in range; a taken port is rejected.
	var np corev1.Service
	h.mustDo(http.StatusCreated, "POST", base, "", serviceManifest("np", "NodePort", "", 0), &np)
	port := np.Spec.Ports[0].NodePort
	if int(port) < allocator.NodePortFirst || int(port) > allocator.NodePortLast {
		t.Fatalf("node port %d", port)
	}
	code, _ = h.do("POST", base, "", serviceManifest("np2", "NodePort", "", int(port)), &st)
	if code != 422 || st.Details.Causes[0].Field != "spec.ports[0].nodePort" {
		t.Fatalf("taken node port: %d %+v", code, st)
	}

	// A plain PUT without clusterIP keeps the address; deleting frees it for reuse.
	var upd corev1.Service
	h.mustDo(http.StatusOK, "PUT", base+"/a", "", serviceManifest("a", "", "", 0), &upd)
	if upd.Spec.ClusterIP != a.Spec.ClusterIP {
		t.Fatalf("update moved the cluster IP %s -> %s", a.Spec.ClusterIP, upd.Spec.ClusterIP)
	}
	h.mustDo(http.StatusOK, "DELETE", base+"/a", "", nil, nil)
	h.mustDo(http.StatusOK, "DELETE", base+"/np", "", nil, nil)
	var again corev1.Service
	h.mustDo(http.StatusCreated, "POST", base, "", serviceManifest("again", "NodePort", a.Spec.ClusterIP, int(port)), &again)
	if again.Spec.ClusterIP != a.Spec.ClusterIP || again.Spec.Ports[0].NodePort != port {
		t.Fatalf("freed addresses not reusable: %+v", again.Spec)
	}

	// Headless services get no address.
	var hl corev1.Service
	h.mustDo(http.StatusCreated, "POST", base, "", serviceManifest("headless", "", "None", 0), &hl)
	if hl.Spec.ClusterIP != "None" {
		t.Fatalf("headless got %q", hl.Spec.ClusterIP)
	}
}

func TestNodePodCIDRs(t *testing.T) {
	h := newHarness(t)
	node := func(name, cidr string) map[string]any {
		spec := map[string]any{}
		if cidr != "" {
			spec["podCIDR"] = cidr
		}
		return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}, "spec": spec}
	}
	name := "cidr-" + registry.RandomSuffix()
	var a, b corev1.Node
	h.mustDo(http.StatusCreated, "POST", "/api/v1/nodes", "", node(name+"-a", ""), &a)
	h.mustDo(http.StatusCreated, "POST", "/api/v1/nodes", "", node(name+"-b", ""), &b)
	pa, err1 := netip.ParsePrefix(a.Spec.PodCIDR)
	pb, err2 := netip.ParsePrefix(b.Spec.PodCIDR)
	if err1 != nil || err2 != nil || pa.Bits() != 24 || !allocator.DefaultPodCIDRRange.Contains(pa.Addr()) || pa == pb {
		t.Fatalf("pod CIDRs %q %q", a.Spec.PodCIDR, b.Spec.PodCIDR)
	}
	if len(a.Spec.PodCIDRs) != 1 || a.Spec.PodCIDRs[0] != a.Spec.PodCIDR {
		t.Fatalf("podCIDRs %v", a.Spec.PodCIDRs)
	}
	var st metav1.Status
	if code, _ := h.do("POST", "/api/v1/nodes", "", node(name+"-c", a.Spec.PodCIDR), &st); code != 422 || st.Details.Causes[0].Field != "spec.podCIDR" {
		t.Fatalf("taken CIDR: %d %+v", code, st)
	}
	// An update without podCIDR keeps it; the block is not reused while the node exists.
	var upd corev1.Node
	h.mustDo(http.StatusOK, "PUT", "/api/v1/nodes/"+a.Name, "", node(a.Name, ""), &upd)
	if upd.Spec.PodCIDR != a.Spec.PodCIDR {
		t.Fatalf("update moved podCIDR %s -> %s", a.Spec.PodCIDR, upd.Spec.PodCIDR)
	}
	h.mustDo(http.StatusOK, "DELETE", "/api/v1/nodes/"+a.Name, "", nil, nil)
	var c corev1.Node
	h.mustDo(http.StatusCreated, "POST", "/api/v1/nodes", "", node(name+"-c", a.Spec.PodCIDR), &c)
	if c.Spec.PodCIDR != a.Spec.PodCIDR {
		t.Fatalf("freed block not reusable: %s", c.Spec.PodCIDR)
	}
	for _, n := range []string{b.Name, c.Name} {
		h.mustDo(http.StatusOK, "DELETE", "/api/v1/nodes/"+n, "", nil, nil)
	}
}
