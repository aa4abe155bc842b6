package framework

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/scheme"
)

func node(name string, mod ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, m := range mod {
		m(n)
	}
	return n
}

func pod(name string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	for _, m := range mod {
		m(p)
	}
	return p
}

func requests(cpu, mem string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		p.Spec.Containers[0].Resources.Requests = l
	}
}

func ownedBy(uid string) func(*corev1.Pod) {
	yes := true
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: &yes}}
	}
}

func info(n *corev1.Node, pods ...*corev1.Pod) *NodeInfo {
	ni := NewNodeInfo(n)
	for _, p := range pods {
		ni.AddPod(p)
	}
	return ni
}

// used gives ni a fresh usage report (cpu and mem as quantities, "" for zero).
func used(ni *NodeInfo, cpu, mem string) *NodeInfo {
	u := &Usage{Time: time.Now()}
	if cpu != "" {
		q := resource.MustParse(cpu)
		u.MilliCPU = q.MilliValue()
	}
	if mem != "" {
		q := resource.MustParse(mem)
		u.Memory = q.Value()
	}
	ni.Usage = u
	return ni
}

func term(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

func required(terms ...corev1.NodeSelectorTerm) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
}

func TestFilters(t *testing.T) {
	labelled := func(k, v string) func(*corev1.Node) { return func(n *corev1.Node) { n.Labels[k] = v } }
	tainted := func(key, value string, e corev1.TaintEffect) func(*corev1.Node) {
		return func(n *corev1.Node) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: e})
		}
	}
	tolerate := func(tol corev1.Toleration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tol) }
	}
	hostPort := func(ip string, port int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{HostIP: ip, HostPort: port, ContainerPort: 80})
		}
	}
	op := func(key string, o corev1.NodeSelectorOperator, vals ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: o, Values: vals}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		node *NodeInfo
		want []string
	}{
		{"ready node fits", pod("p"), info(node("n")), nil},
		{"not ready", pod("p"), info(node("n", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionUnknown })), []string{ReasonNotReady}},
		{"no ready condition", pod("p"), info(node("n", func(n *corev1.Node) { n.Status.Conditions = nil })), []string{ReasonNotReady}},
		{"cordoned", pod("p"), info(node("n", func(n *corev1.Node) { n.Spec.Unschedulable = true })), []string{ReasonUnschedulable}},
		{"cordoned but tolerated", pod("p", tolerate(corev1.Toleration{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists})),
			info(node("n", func(n *corev1.Node) { n.Spec.Unschedulable = true })), nil},
		{"nodeSelector matches", pod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), info(node("n", labelled("disk", "ssd"))), nil},
		{"nodeSelector value differs", pod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), info(node("n", labelled("disk", "hdd"))), []string{ReasonNodeAffinity}},
		{"nodeSelector label missing", pod("p", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), info(node("n")), []string{ReasonNodeAffinity}},
		{"affinity In", pod("p", required(term(op("zone", corev1.NodeSelectorOpIn, "a", "b")))), info(node("n", labelled("zone", "b"))), nil},
		{"affinity In fails", pod("p", required(term(op("zone", corev1.NodeSelectorOpIn, "a")))), info(node("n", labelled("zone", "b"))), []string{ReasonNodeAffinity}},
		{"affinity NotIn", pod("p", required(term(op("zone", corev1.NodeSelectorOpNotIn, "a")))), info(node("n")), nil},
		{"affinity NotIn fails", pod("p", required(term(op("zone", corev1.NodeSelectorOpNotIn, "a")))), info(node("n", labelled("zone", "a"))), []string{ReasonNodeAffinity}},
		{"affinity Exists", pod("p", required(term(op("gpu", corev1.NodeSelectorOpExists)))), info(node("n", labelled("gpu", ""))), nil},
		{"affinity DoesNotExist fails", pod("p", required(term(op("gpu", corev1.NodeSelectorOpDoesNotExist)))), info(node("n", labelled("gpu", "x"))), []string{ReasonNodeAffinity}},
		{"affinity Gt", pod("p", required(term(op("cores", corev1.NodeSelectorOpGt, "4")))), info(node("n", labelled("cores", "8"))), nil},
		{"affinity Gt fails", pod("p", required(term(op("cores", corev1.NodeSelectorOpGt, "8")))), info(node("n", labelled("cores", "8"))), []string{ReasonNodeAffinity}},
		{"affinity Lt non-numeric fails", pod("p", required(term(op("cores", corev1.NodeSelectorOpLt, "8")))), info(node("n", labelled("cores", "many"))), []string{ReasonNodeAffinity}},
		{"affinity terms are ORed", pod("p", required(term(op("zone", corev1.NodeSelectorOpIn, "x")), term(op("zone", corev1.NodeSelectorOpIn, "b")))), info(node("n", labelled("zone", "b"))), nil},
		{"affinity requirements are ANDed", pod("p", required(term(op("zone", corev1.NodeSelectorOpIn, "b"), op("gpu", corev1.NodeSelectorOpExists)))), info(node("n", labelled("zone", "b"))), []string{ReasonNodeAffinity}},
		{"affinity matchFields metadata.name", pod("p", required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{op("metadata.name", corev1.NodeSelectorOpIn, "n")}})), info(node("n")), nil},
		{"affinity matchFields other name", pod("p", required(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{op("metadata.name", corev1.NodeSelectorOpIn, "m")}})), info(node("n")), []string{ReasonNodeAffinity}},
		{"affinity empty term matches nothing", pod("p", required(corev1.NodeSelectorTerm{})), info(node("n")), []string{ReasonNodeAffinity}},
		{"NoSchedule taint", pod("p"), info(node("n", tainted("dedicated", "db", corev1.TaintEffectNoSchedule))), []string{"node(s) had untolerated taint {dedicated: db}"}},
		{"NoExecute taint", pod("p"), info(node("n", tainted("node.kubernetes.io/unreachable", "", corev1.TaintEffectNoExecute))), []string{"node(s) had untolerated taint {node.kubernetes.io/unreachable: }"}},
		{"PreferNoSchedule is no filter", pod("p"), info(node("n", tainted("x", "", corev1.TaintEffectPreferNoSchedule))), nil},
		{"toleration Equal", pod("p", tolerate(corev1.Toleration{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule})), info(node("n", tainted("dedicated", "db", corev1.TaintEffectNoSchedule))), nil},
		{"toleration wrong value", pod("p", tolerate(corev1.Toleration{Key: "dedicated", Value: "web"})), info(node("n", tainted("dedicated", "db", corev1.TaintEffectNoSchedule))), []string{"node(s) had untolerated taint {dedicated: db}"}},
		{"toleration wrong effect", pod("p", tolerate(corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute})), info(node("n", tainted("dedicated", "db", corev1.TaintEffectNoSchedule))), []string{"node(s) had untolerated taint {dedicated: db}"}},
		{"toleration of everything", pod("p", tolerate(corev1.Toleration{Operator: corev1.TolerationOpExists})), info(node("n", tainted("a", "b", corev1.TaintEffectNoExecute))), nil},
		{"host port free", pod("p", hostPort("", 8080)), info(node("n"), pod("q", hostPort("", 9090))), nil},
		{"host port taken", pod("p", hostPort("", 8080)), info(node("n"), pod("q", hostPort("", 8080))), []string{ReasonHostPorts}},
		{"host port on other IP", pod("p", hostPort("10.0.0.1", 8080)), info(node("n"), pod("q", hostPort("10.0.0.2", 8080))), nil},
		{"host port wildcard clashes", pod("p", hostPort("10.0.0.1", 8080)), info(node("n"), pod("q", hostPort("0.0.0.0", 8080))), []string{ReasonHostPorts}},
		{"fits resources", pod("p", requests("1", "1Gi")), info(node("n"), pod("q", requests("1", "3Gi"))), nil},
		{"insufficient cpu", pod("p", requests("1500m", "")), info(node("n"), pod("q", requests("1", ""))), []string{"Insufficient cpu"}},
		{"insufficient cpu and memory", pod("p", requests("3", "5Gi")), info(node("n")), []string{"Insufficient cpu", "Insufficient memory"}},
		{"init container max rule", pod("p", requests("500m", ""), func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}}}}
		}), info(node("n"), pod("q", requests("1", ""))), []string{"Insufficient cpu"}},
		{"extended resource", pod("p", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"example.com/gpu": resource.MustParse("1")}
		}), info(node("n")), []string{"Insufficient example.com/gpu"}},
		{"too many pods", pod("p"), info(node("n", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("1") }), pod("q")), []string{ReasonTooManyPods}},
		{"first failing filter wins", pod("p", requests("3", "")), info(node("n", func(n *corev1.Node) { n.Spec.Unschedulable = true })), []string{ReasonUnschedulable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RunFilters(DefaultFilters(), tt.pod, tt.node)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeInfoRemoveUndoesAdd(t *testing.T) {
	p := pod("p", requests("250m", "1Gi"), ownedBy("rs"), func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 80}}
	})
	ni := info(node("n"))
	ni.AddPod(p)
	ni.RemovePod(p)
	want := NewNodeInfo(ni.Node)
	if diff := cmp.Diff(want, ni, cmpopts.EquateEmpty(), cmpopts.IgnoreUnexported(NodeInfo{})); diff != "" {
		t.Errorf("after add+remove (-want +got):\n%s", diff)
	}
}

// CopyTo over a NodeInfo that held another node leaves an exact copy that shares nothing the
// copy's owner may change.
func TestNodeInfoCopyTo(t *testing.T) {
	gpu := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	}
	port := func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 80}} }
	n := node("a")
	mk := func() *NodeInfo {
		return used(info(n, pod("p", requests("250m", "1Gi"), ownedBy("rs"), port, gpu)), "100m", "")
	}
	src, want := mk(), mk() // want is built apart, so it shares nothing with src or the copy
	want.Usage.Time = src.Usage.Time
	dst := info(node("b"), pod("q", requests("1", ""), ownedBy("other"), gpu), pod("r", ownedBy("third")))
	src.CopyTo(dst)
	if diff := cmp.Diff(src, dst, cmp.AllowUnexported(NodeInfo{})); diff != "" {
		t.Fatalf("copy differs from its source (-src +copy):\n%s", diff)
	}
	dst.PodsByOwner["rs"] = 7
	dst.Requested.Scalar["example.com/gpu"] = 9
	dst.Ports[0].Port = 81
	dst.Usage.MilliCPU = 5
	if diff := cmp.Diff(want, src, cmp.AllowUnexported(NodeInfo{})); diff != "" {
		t.Errorf("changing the copy changed its source (-before +after):\n%s", diff)
	}
}

// SameAccounting is true exactly when swapping the pods leaves a NodeInfo's sums as they were.
func TestSameAccounting(t *testing.T) {
	hostPort := func(port int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: port}} }
	}
	base := []func(*corev1.Pod){requests("250m", "1Gi"), ownedBy("rs"), hostPort(80)}
	bound := func(p *corev1.Pod) { p.Spec.NodeName = "n"; p.Status.Phase = corev1.PodRunning }
	gpu := func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
	}
	for _, tc := range []struct {
		name string
		mod  []func(*corev1.Pod)
		want bool
	}{
		{"bound, running, same spec", []func(*corev1.Pod){bound}, true},
		{"more cpu", []func(*corev1.Pod){requests("500m", "1Gi")}, false},
		{"more memory", []func(*corev1.Pod){requests("250m", "2Gi")}, false},
		{"an extended resource", []func(*corev1.Pod){gpu}, false},
		{"another controller", []func(*corev1.Pod){ownedBy("rs2")}, false},
		{"another host port", []func(*corev1.Pod){hostPort(81)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pod("p", base...), pod("p", append(append([]func(*corev1.Pod){}, base...), tc.mod...)...)
			if got := SameAccounting(a, b); got != tc.want {
				t.Fatalf("SameAccounting = %v, want %v", got, tc.want)
			}
			// The answer must agree with what the sums do.
			ni := info(node("n"), a)
			ni.RemovePod(a)
			ni.AddPod(b)
			ref := info(node("n"), a)
			same := ni.Requested.MilliCPU == ref.Requested.MilliCPU && ni.Requested.Memory == ref.Requested.Memory &&
				cmp.Equal(ni.Requested.Scalar, ref.Requested.Scalar, cmpopts.EquateEmpty()) &&
				cmp.Equal(ni.PodsByOwner, ref.PodsByOwner) && cmp.Equal(ni.Ports, ref.Ports)
			if same != tc.want {
				t.Errorf("swapping the pods changes the sums: %v, but SameAccounting says %v", !same, tc.want)
			}
		})
	}
}

// The answers NodeInfo keeps per Node (readiness, allocatable) follow the Node when an update
// replaces it, as the cache does for every node event.
func TestNodeInfoFactsFollowNodeUpdates(t *testing.T) {
	ni := info(node("n", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }))
	if got := RunFilters(DefaultFilters(), pod("p"), ni); !cmp.Equal(got, []string{ReasonNotReady}) {
		t.Fatalf("not-ready node: reasons %v, want %v", got, []string{ReasonNotReady})
	}
	ni.Node = node("n", func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("100m") })
	if got := RunFilters(DefaultFilters(), pod("p", requests("200m", "")), ni); !cmp.Equal(got, []string{InsufficientReason(corev1.ResourceCPU)}) {
		t.Fatalf("after the node turned Ready with 100m CPU: reasons %v, want Insufficient cpu", got)
	}
	ni.Node = node("n")
	if got := RunFilters(DefaultFilters(), pod("p", requests("200m", "")), ni); got != nil {
		t.Fatalf("after the node grew to 2 CPUs: reasons %v, want none", got)
	}
	ni.Node = node("n", func(n *corev1.Node) { n.Spec.Unschedulable = true })
	if got := RunFilters(DefaultFilters(), pod("p"), ni); !cmp.Equal(got, []string{ReasonUnschedulable}) {
		t.Fatalf("after cordon: reasons %v, want %v", got, []string{ReasonUnschedulable})
	}
	taint := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
	ni.Node = node("n", func(n *corev1.Node) {
		n.Spec.Taints = []corev1.Taint{{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}, taint}
	})
	if got := RunFilters(DefaultFilters(), pod("p"), ni); !cmp.Equal(got, []string{TaintReason(taint)}) {
		t.Fatalf("after uncordon and a taint: reasons %v, want %v", got, []string{TaintReason(taint)})
	}
}

func TestFitErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  FitError
		want string
	}{
		{"issue example", FitError{NumNodes: 3, Failed: map[string][]string{
			"a": {"Insufficient memory"}, "b": {"Insufficient memory"}, "c": {ReasonNodeAffinity}}},
			"0/3 nodes are available: 2 Insufficient memory, 1 node(s) didn't match Pod's node affinity/selector."},
		{"equal counts sort by reason", FitError{NumNodes: 2, Failed: map[string][]string{
			"a": {ReasonUnschedulable}, "b": {"Insufficient cpu", "Insufficient memory"}}},
			"0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable."},
		{"no nodes", FitError{}, NoNodesAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// feasible is FindFeasible over every node.
func feasible(filters []Filter, pod *corev1.Pod, nodes []*NodeInfo) ([]*NodeInfo, error) {
	ok, _, err := FindFeasible(nil, filters, pod, nodes, 0, 0)
	return ok, err
}

func TestFeasible(t *testing.T) {
	nodes := []*NodeInfo{info(node("a")), info(node("b", func(n *corev1.Node) { n.Spec.Unschedulable = true })), info(node("c"))}
	got, err := feasible(DefaultFilters(), pod("p"), nodes)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range got {
		names = append(names, n.Name())
	}
	if diff := cmp.Diff([]string{"a", "c"}, names); diff != "" {
		t.Errorf("feasible (-want +got):\n%s", diff)
	}
	_, err = feasible(DefaultFilters(), pod("p", requests("8", "")), nodes)
	want := "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) were unschedulable."
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestStrategies(t *testing.T) {
	big := func(n *corev1.Node) {
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("8")
		n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse("16Gi")
	}
	tests := []struct {
		name     string
		strategy Strategy
		pod      *corev1.Pod
		nodes    []*NodeInfo
		want     []string // successive picks for the same pod and nodes
	}{
		{"roundrobin rotates", &RoundRobin{}, pod("p"), []*NodeInfo{info(node("a")), info(node("b")), info(node("c"))}, []string{"a", "b", "c", "a"}},
		{"leastpods", LeastPods{}, pod("p"), []*NodeInfo{info(node("a"), pod("x"), pod("y")), info(node("b"), pod("z")), info(node("c"), pod("w"))}, []string{"b"}},
		{"leastcpu by share", LeastCPU{}, pod("p", requests("500m", "")), []*NodeInfo{
			info(node("a"), pod("x", requests("1", ""))),      // 1.5/2 = 0.75
			info(node("b", big), pod("y", requests("2", ""))), // 2.5/8 = 0.31
		}, []string{"b"}},
		{"leastmemory", LeastMemory{}, pod("p"), []*NodeInfo{info(node("a"), pod("x", requests("", "3Gi"))), info(node("b"), pod("y", requests("", "1Gi")))}, []string{"b"}},
		{"leastmemory tie by pods then name", LeastMemory{}, pod("p"), []*NodeInfo{info(node("a"), pod("x")), info(node("b")), info(node("c"))}, []string{"b"}},
		{"balanced spreads owner first", Balanced{}, pod("p", ownedBy("rs1")), []*NodeInfo{
			info(node("a"), pod("x", ownedBy("rs1"))),
			info(node("b"), pod("y", requests("1500m", "3Gi")), pod("z")),
		}, []string{"b"}},
		{"balanced then least requested", Balanced{}, pod("p", ownedBy("rs1")), []*NodeInfo{
			info(node("a"), pod("x", requests("1", "2Gi"))),
			info(node("b"), pod("y", requests("100m", "100Mi")), pod("z")),
		}, []string{"b"}},
		{"leastcpu: low requests but high usage loses", LeastCPU{}, pod("p", requests("100m", "")), []*NodeInfo{
			used(info(node("a"), pod("x", requests("200m", ""))), "1800m", ""), // max(0.2, 1.8)+0.1 of 2 = 0.95
			info(node("b"), pod("y", requests("1", ""))),                       // 1.1/2 = 0.55
		}, []string{"b"}},
		{"leastcpu: usage under requests changes nothing", LeastCPU{}, pod("p", requests("100m", "")), []*NodeInfo{
			used(info(node("a"), pod("x", requests("1", ""))), "100m", ""),
			info(node("b"), pod("y", requests("500m", ""))),
		}, []string{"b"}},
		{"leastcpu: usage weighed against allocatable", LeastCPU{}, pod("p"), []*NodeInfo{
			used(info(node("a")), "1", ""),      // 1/2
			used(info(node("b", big)), "3", ""), // 3/8
		}, []string{"b"}},
		{"leastcpu: missing usage is requests only", LeastCPU{}, pod("p", requests("100m", "")), []*NodeInfo{
			info(node("a"), pod("x", requests("200m", ""))),
			info(node("b"), pod("y", requests("1", ""))),
		}, []string{"a"}},
		{"leastmemory: low requests but high usage loses", LeastMemory{}, pod("p", requests("", "256Mi")), []*NodeInfo{
			used(info(node("a"), pod("x", requests("", "512Mi"))), "", "3Gi"),
			info(node("b"), pod("y", requests("", "2Gi"))),
		}, []string{"b"}},
		{"leastmemory: missing usage is requests only", LeastMemory{}, pod("p", requests("", "256Mi")), []*NodeInfo{
			info(node("a"), pod("x", requests("", "512Mi"))),
			info(node("b"), pod("y", requests("", "2Gi"))),
		}, []string{"a"}},
		{"random is seeded", NewRandom(rand.New(rand.NewPCG(1, 2))), pod("p"), []*NodeInfo{info(node("a")), info(node("b")), info(node("c"))}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil { // random: same seed, same sequence, and only given nodes
				other := NewRandom(rand.New(rand.NewPCG(1, 2)))
				seen := map[string]bool{}
				for range 30 {
					a, b := tt.strategy.Select(tt.pod, tt.nodes).Name(), other.Select(tt.pod, tt.nodes).Name()
					if a != b {
						t.Fatalf("same seed gave %s and %s", a, b)
					}
					seen[a] = true
				}
				if len(seen) != 3 {
					t.Errorf("30 random picks over 3 nodes hit only %v", seen)
				}
				return
			}
			var got []string
			for range tt.want {
				got = append(got, tt.strategy.Select(tt.pod, tt.nodes).Name())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewStrategy(t *testing.T) {
	for _, name := range StrategyNames {
		s, err := NewStrategy(name, nil)
		if err != nil || s.Name() != name {
			t.Errorf("NewStrategy(%q) = %v, %v", name, s, err)
		}
	}
	if _, err := NewStrategy("best", nil); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func TestNodeUsage(t *testing.T) {
	at := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	ann := func(cpu, mem, when string) *corev1.Node {
		n := node("n")
		n.Annotations = map[string]string{}
		for k, v := range map[string]string{scheme.AnnotationUsageCPU: cpu, scheme.AnnotationUsageMemory: mem, scheme.AnnotationUsageTime: when} {
			if v != "-" {
				n.Annotations[k] = v
			}
		}
		return n
	}
	tests := []struct {
		name   string
		node   *corev1.Node
		want   Usage
		wantOK bool
	}{
		{"all three", ann("250m", "123456789", "2025-06-01T10:00:00Z"), Usage{MilliCPU: 250, Memory: 123456789, Time: at}, true},
		{"binary suffix and whole cores", ann("2", "64Mi", "2025-06-01T10:00:00Z"), Usage{MilliCPU: 2000, Memory: 64 << 20, Time: at}, true},
		{"no annotations", node("n"), Usage{}, false},
		{"time missing", ann("250m", "1Gi", "-"), Usage{}, false},
		{"cpu unparsable", ann("lots", "1Gi", "2025-06-01T10:00:00Z"), Usage{}, false},
		{"memory negative", ann("250m", "-1Gi", "2025-06-01T10:00:00Z"), Usage{}, false},
		{"time not RFC 3339", ann("250m", "1Gi", "yesterday"), Usage{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NodeUsage(tt.node)
			if ok != tt.wantOK || !got.Time.Equal(tt.want.Time) || got.MilliCPU != tt.want.MilliCPU || got.Memory != tt.want.Memory {
				t.Errorf("NodeUsage = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	for _, tt := range []struct{ total, pct, want int }{
		{50, 0, 50},       // small clusters: every node
		{99, 10, 99},      // below the minimum nothing is skipped
		{1000, 0, 420},    // adaptive: 50% - 1000/125 = 42%
		{5000, 0, 500},    // adaptive: 50% - 40 = 10%
		{20000, 0, 1000},  // adaptive floor: 5%
		{500, 10, 100},    // never fewer than 100
		{5000, 100, 5000}, // 100: all
		{5000, 30, 1500},
	} {
		if got := NumFeasibleNodesToFind(tt.total, tt.pct); got != tt.want {
			t.Errorf("NumFeasibleNodesToFind(%d, %d) = %d, want %d", tt.total, tt.pct, got, tt.want)
		}
	}
}

func TestFindFeasible(t *testing.T) {
	var nodes []*NodeInfo
	for i := range 10 {
		n := node(fmt.Sprintf("n%d", i))
		n.Spec.Unschedulable = i%3 == 0 // n0, n3, n6, n9 cordoned
		nodes = append(nodes, info(n))
	}
	names := func(ns []*NodeInfo) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name())
		}
		return out
	}
	filters := DefaultFilters()
	got, examined, err := FindFeasible(nil, filters, pod("p"), nodes, 5, 3)
	if err != nil || examined != 4 {
		t.Fatalf("FindFeasible from 5 for 3 = %v, examined %d, %v; want 4 examined", names(got), examined, err)
	}
	if diff := cmp.Diff([]string{"n5", "n7", "n8"}, names(got)); diff != "" {
		t.Errorf("found (-want +got):\n%s", diff)
	}
	got, examined, _ = FindFeasible(nil, filters, pod("p"), nodes, 8, 3)
	if diff := cmp.Diff([]string{"n8", "n1", "n2"}, names(got)); diff != "" || examined != 5 {
		t.Errorf("wrapping search found %v after %d, want n8 n1 n2 after 5", names(got), examined)
	}
	got, examined, _ = FindFeasible(nil, filters, pod("p"), nodes, 0, 0)
	if len(got) != 6 || examined != 10 {
		t.Errorf("want 0 found %d after %d, want all 6 after 10", len(got), examined)
	}
	for _, n := range nodes {
		// An update brings a new Node object, as the cache's SetNode does.
		cordoned := n.Node.DeepCopy()
		cordoned.Spec.Unschedulable = true
		n.Node = cordoned
	}
	_, examined, err = FindFeasible(nil, filters, pod("p"), nodes, 4, 2)
	var fe *FitError
	if !errors.As(err, &fe) || examined != 10 || len(fe.Failed) != 10 || fe.NumNodes != 10 {
		t.Fatalf("no feasible node: err %v after %d; want a FitError counting all 10", err, examined)
	}
}

// RoundRobin's sample (start after the last node handed out, one node wanted) makes the same
// choices as RoundRobin over every feasible node.
func TestRoundRobinSampleMatchesFullSearch(t *testing.T) {
	var nodes []*NodeInfo
	for i := range 40 {
		n := node(fmt.Sprintf("n%02d", i))
		n.Spec.Unschedulable = i%4 == 1 || i > 35
		nodes = append(nodes, info(n))
	}
	full, sampled := &RoundRobin{}, &RoundRobin{}
	for i := range 100 {
		all, err := feasible(DefaultFilters(), pod("p"), nodes)
		if err != nil {
			t.Fatal(err)
		}
		want := full.Select(pod("p"), all).Name()
		start, n := sampled.Sample(nodes)
		some, _, err := FindFeasible(nil, DefaultFilters(), pod("p"), nodes, start, n)
		if err != nil {
			t.Fatal(err)
		}
		if got := sampled.Select(pod("p"), some).Name(); got != want {
			t.Fatalf("pod %d: sampled round robin chose %s, full search %s", i, got, want)
		}
	}
}
