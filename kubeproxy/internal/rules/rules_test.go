package rules

import (
	"bytes"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"minik8s.io/kubeproxy/internal/catalog"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

var defaultOptions = Options{ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), Balance: Random}

func build(services []*corev1.Service, slices []*discoveryv1.EndpointSlice, o Options) *Ruleset {
	return Build(catalog.ServicePorts(services, catalog.Index(slices)), o)
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("payload differs from %s (-want +got):\n%s", path, diff)
	}
}

var (
	web      = service("default", "web", "10.96.0.10", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 8080, 0)})
	webSlice = slice("default", "web", "web-abc", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
		ep{ip: "10.244.1.2", ready: true}, ep{ip: "10.244.2.3", ready: true}, ep{ip: "10.244.2.4", ready: false})
)

type goldenCase struct {
	name     string
	services []*corev1.Service
	slices   []*discoveryv1.EndpointSlice
	opts     Options
}

func (tc goldenCase) options() Options {
	if tc.opts.Balance == "" {
		return defaultOptions
	}
	return tc.opts
}

var goldenCases = []goldenCase{
	{name: "clusterip-two-endpoints", services: []*corev1.Service{web}, slices: []*discoveryv1.EndpointSlice{webSlice}},
	{
		name: "nodeport",
		services: []*corev1.Service{service("shop", "front", "10.96.0.20",
			[]corev1.ServicePort{port("", corev1.ProtocolTCP, 80, 8080, 30080)}, nodePort)},
		slices: []*discoveryv1.EndpointSlice{slice("shop", "front", "front-1",
			[]discoveryv1.EndpointPort{slicePort("", corev1.ProtocolTCP, 8080)}, ep{ip: "10.244.1.7", ready: true})},
	},
	{
		name: "nodeport-addresses",
		services: []*corev1.Service{service("shop", "front", "10.96.0.20",
			[]corev1.ServicePort{port("", corev1.ProtocolTCP, 80, 8080, 30080)}, nodePort)},
		slices: []*discoveryv1.EndpointSlice{slice("shop", "front", "front-1",
			[]discoveryv1.EndpointPort{slicePort("", corev1.ProtocolTCP, 8080)}, ep{ip: "10.244.1.7", ready: true})},
		opts: Options{ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), Balance: Random,
			NodePortAddresses: []netip.Prefix{netip.MustParsePrefix("192.168.56.11/32")}},
	},
	{
		// Two ports, one of them UDP; the named targetPort "metrics" is 9100 on one pod
		// and 9200 on the other, so the controller puts them in two slices.
		name: "multiport-named-targetport",
		services: []*corev1.Service{service("mon", "agent", "10.96.0.30", []corev1.ServicePort{
			namedPort("metrics", 9100, "metrics"), port("dns", corev1.ProtocolUDP, 53, 1053, 0)})},
		slices: []*discoveryv1.EndpointSlice{
			slice("mon", "agent", "agent-a", []discoveryv1.EndpointPort{slicePort("metrics", corev1.ProtocolTCP, 9100), slicePort("dns", corev1.ProtocolUDP, 1053)},
				ep{ip: "10.244.1.5", ready: true}),
			slice("mon", "agent", "agent-b", []discoveryv1.EndpointPort{slicePort("metrics", corev1.ProtocolTCP, 9200), slicePort("dns", corev1.ProtocolUDP, 1053)},
				ep{ip: "10.244.2.5", ready: true}),
		},
	},
	{
		name:     "headless",
		services: []*corev1.Service{service("db", "pg", corev1.ClusterIPNone, []corev1.ServicePort{port("pg", corev1.ProtocolTCP, 5432, 5432, 0)})},
		slices: []*discoveryv1.EndpointSlice{slice("db", "pg", "pg-1", []discoveryv1.EndpointPort{slicePort("pg", corev1.ProtocolTCP, 5432)},
			ep{ip: "10.244.1.9", ready: true, hostname: "pg-0"})},
	},
	{
		// No slice at all for one port, only unready endpoints for the other: both refuse.
		name: "no-endpoints",
		services: []*corev1.Service{
			service("default", "empty", "10.96.0.40", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 8080, 30040)}, nodePort),
			service("default", "starting", "10.96.0.41", []corev1.ServicePort{port("", corev1.ProtocolUDP, 53, 53, 0)}),
		},
		slices: []*discoveryv1.EndpointSlice{slice("default", "starting", "starting-1",
			[]discoveryv1.EndpointPort{slicePort("", corev1.ProtocolUDP, 53)}, ep{ip: "10.244.1.4", ready: false})},
	},
	{
		name: "session-affinity",
		services: []*corev1.Service{service("default", "sticky", "10.96.0.50",
			[]corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 8080, 0)}, affinity(600))},
		slices: []*discoveryv1.EndpointSlice{slice("default", "sticky", "sticky-1",
			[]discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
			ep{ip: "10.244.1.2", ready: true}, ep{ip: "10.244.2.2", ready: true})},
	},
	{
		name: "round-robin",
		services: []*corev1.Service{service("default", "rr", "10.96.0.60",
			[]corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 8080, 0)})},
		slices: []*discoveryv1.EndpointSlice{slice("default", "rr", "rr-1",
			[]discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
			ep{ip: "10.244.1.2", ready: true}, ep{ip: "10.244.1.3", ready: true}, ep{ip: "10.244.2.2", ready: true})},
		opts: Options{ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"), Balance: RoundRobin},
	},
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.options()
			r := build(tc.services, tc.slices, o)
			checkGolden(t, tc.name, r.Payload(nil))
			// The same input gives the same bytes.
			if again := build(tc.services, tc.slices, o).Payload(nil); !bytes.Equal(again, r.Payload(nil)) {
				t.Error("two builds of the same input differ")
			}
		})
	}
}

// TestOneServiceChange moves one endpoint of one Service among several: the payload for the
// new state, written against the chains the old one left, deletes the old endpoint's chain,
// and every chain of the other Services stays exactly as it was.
func TestOneServiceChange(t *testing.T) {
	services, before, after := oneServiceChange()
	api := services[0]
	old := build(services, before, defaultOptions)
	cur := build(services, after, defaultOptions)
	checkGolden(t, "one-service-change", cur.Payload(old.State()))

	changed := map[string]bool{}
	oldChains := chainsByName(old)
	for name, rules := range chainsByName(cur) {
		if !cmp.Equal(oldChains[name], rules) {
			changed[name] = true
		}
	}
	for name := range oldChains {
		if _, ok := chainsByName(cur)[name]; !ok {
			changed[name] = true
		}
	}
	apiPort := catalog.ServicePorts([]*corev1.Service{api}, catalog.Index(after))[0]
	oldEP := catalog.Endpoint{IP: netip.MustParseAddr("10.244.2.20"), Port: 8080}
	newEP := catalog.Endpoint{IP: netip.MustParseAddr("10.244.3.21"), Port: 8080}
	want := map[string]bool{
		"nat/" + ServiceChain(apiPort):         true, // its jumps name the endpoints
		"nat/" + EndpointChain(apiPort, oldEP): true, // gone
		"nat/" + EndpointChain(apiPort, newEP): true, // new
	}
	if diff := cmp.Diff(want, changed); diff != "" {
		t.Errorf("changed chains (-want +got):\n%s", diff)
	}
}

// oneServiceChange is two Services, and two states of their slices that differ in one
// endpoint of the first.
func oneServiceChange() (services []*corev1.Service, before, after []*discoveryv1.EndpointSlice) {
	api := service("default", "api", "10.96.0.70", []corev1.ServicePort{port("http", corev1.ProtocolTCP, 80, 8080, 0)})
	before = []*discoveryv1.EndpointSlice{
		webSlice,
		slice("default", "api", "api-1", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
			ep{ip: "10.244.1.20", ready: true}, ep{ip: "10.244.2.20", ready: true}),
	}
	after = []*discoveryv1.EndpointSlice{
		webSlice,
		slice("default", "api", "api-1", []discoveryv1.EndpointPort{slicePort("http", corev1.ProtocolTCP, 8080)},
			ep{ip: "10.244.1.20", ready: true}, ep{ip: "10.244.3.21", ready: true}),
	}
	return []*corev1.Service{api, web}, before, after
}

func chainsByName(r *Ruleset) map[string][]string {
	out := map[string][]string{}
	for _, t := range r.Tables {
		for _, c := range t.Chains {
			out[t.Name+"/"+c.Name] = c.Rules
		}
	}
	return out
}

func TestStaleChainsAreOnlyOurs(t *testing.T) {
	r := build([]*corev1.Service{web}, []*discoveryv1.EndpointSlice{webSlice}, defaultOptions)
	current := r.State()
	current[TableNAT]["DOCKER"] = nil
	current[TableNAT]["MINIK8S-SVC-GONEGONEGONEGONE"] = []string{"-A MINIK8S-SVC-GONEGONEGONEGONE -j MINIK8S-SEP-GONEGONEGONEGONE"}
	current[TableFilter]["DOCKER-USER"] = nil
	current[TableFilter]["MINIK8S-SEP-GONEGONEGONEGONE"] = nil
	p := string(r.Payload(current))
	for _, want := range []string{":MINIK8S-SVC-GONEGONEGONEGONE - [0:0]\n", "-X MINIK8S-SVC-GONEGONEGONEGONE\n", "-X MINIK8S-SEP-GONEGONEGONEGONE\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("payload lacks %q", want)
		}
	}
	for _, not := range []string{"DOCKER", "-X " + ChainServices, "-A " + ChainServices} {
		if strings.Contains(p, not) {
			t.Errorf("payload names %q, which is not stale or not ours", not)
		}
	}
}

func TestChainNamesFitIPTables(t *testing.T) {
	p := catalog.ServicePort{Namespace: strings.Repeat("n", 63), Name: strings.Repeat("s", 63), PortName: strings.Repeat("p", 15), Protocol: corev1.ProtocolTCP}
	e := catalog.Endpoint{IP: netip.MustParseAddr("10.244.255.254"), Port: 65535}
	for _, name := range []string{ServiceChain(p), EndpointChain(p, e), ChainExternalServices} {
		if len(name) > 28 {
			t.Errorf("%s is %d characters; iptables takes 28", name, len(name))
		}
	}
}

func TestProbability(t *testing.T) {
	for _, tc := range []struct {
		left int
		want string
	}{{2, "0.50000000000"}, {3, "0.33333333349"}, {4, "0.25000000000"}, {7, "0.14285714272"}} {
		if got := probability(tc.left); got != tc.want {
			t.Errorf("probability(%d) = %s, want %s", tc.left, got, tc.want)
		}
	}
}

// TestPayloadAgainstItself: a kernel that already holds the ruleset (a restarted kubeproxy
// reading it back) gets an empty payload, so nothing is restored.
func TestPayloadAgainstItself(t *testing.T) {
	r := build([]*corev1.Service{web}, []*discoveryv1.EndpointSlice{webSlice}, defaultOptions)
	if p := r.Payload(r.State()); len(p) != 0 {
		t.Errorf("payload against the same state:\n%s", p)
	}
	parsed, err := ParseSave(r.Payload(nil), TableNAT, TableFilter)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r.State(), parsed); diff != "" {
		t.Errorf("ParseSave of the full payload (-want +got):\n%s", diff)
	}
}

func TestParseSave(t *testing.T) {
	save := `# Generated by iptables-save v1.8.9 (nf_tables)
*filter
:INPUT ACCEPT [0:0]
:MINIK8S-FORWARD - [0:0]
:MINIK8S-SERVICES - [0:0]
-A INPUT -j MINIK8S-SERVICES
-A MINIK8S-FORWARD -j ACCEPT
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:DOCKER - [0:0]
:MINIK8S-SVC-X - [0:0]
-A DOCKER -i docker0 -j RETURN
-A MINIK8S-SVC-X -j MINIK8S-SEP-Y
COMMIT
`
	got, err := ParseSave([]byte(save), TableNAT, TableFilter, "mangle")
	if err != nil {
		t.Fatal(err)
	}
	want := State{
		TableFilter: {"MINIK8S-FORWARD": {"-A MINIK8S-FORWARD -j ACCEPT"}, "MINIK8S-SERVICES": nil},
		TableNAT:    {"MINIK8S-SVC-X": {"-A MINIK8S-SVC-X -j MINIK8S-SEP-Y"}},
		"mangle":    {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
