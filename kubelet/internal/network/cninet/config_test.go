package cninet

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubelet/internal/network"
)

func TestPodListConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{
			name: "defaults",
			cfg:  Config{PodCIDR: "10.244.3.0/24", RootDir: "/var/lib/minik8s/node-1"},
			want: `{"cniVersion":"1.0.0","name":"minik8s","plugins":[
				{"type":"bridge","bridge":"minik8s0","isGateway":true,"ipMasq":false,"hairpinMode":true,
				 "ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.3.0/24","gateway":"10.244.3.1"}]],
				         "routes":[{"dst":"0.0.0.0/0"}],"dataDir":"/var/lib/minik8s/node-1/cni/networks"}},
				{"type":"firewall","backend":"iptables"},
				{"type":"portmap","capabilities":{"portMappings":true},"snat":true}]}`,
		},
		{
			name: "custom bridge, name, mtu; unmasked cidr",
			cfg:  Config{PodCIDR: "10.244.7.9/24", RootDir: "/r", NetworkName: "n2", BridgeName: "br-n2", MTU: 1400},
			want: `{"cniVersion":"1.0.0","name":"n2","plugins":[
				{"type":"bridge","bridge":"br-n2","isGateway":true,"ipMasq":false,"hairpinMode":true,"mtu":1400,
				 "ipam":{"type":"host-local","ranges":[[{"subnet":"10.244.7.0/24","gateway":"10.244.7.1"}]],
				         "routes":[{"dst":"0.0.0.0/0"}],"dataDir":"/r/cni/networks"}},
				{"type":"firewall","backend":"iptables"},
				{"type":"portmap","capabilities":{"portMappings":true},"snat":true}]}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := New(tc.cfg, nil)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var got, want any
			if err := json.Unmarshal(n.podNet.Bytes, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("conflist (-want +got):\n%s", diff)
			}
			if got, want := len(n.podNet.Plugins), 3; got != want {
				t.Errorf("libcni parsed %d plugins, want %d", got, want)
			}
			if n.loNet.Name == n.podNet.Name || n.loNet.Plugins[0].Network.Type != "loopback" {
				t.Errorf("loopback list = %s %v, want its own name and the loopback plugin", n.loNet.Name, n.loNet.Plugins[0].Network)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	ok := Config{PodCIDR: "10.244.3.0/24", RootDir: "/r"}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // substring; "" means valid
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "no cidr", mutate: func(c *Config) { c.PodCIDR = "" }, wantErr: "podCIDR"},
		{name: "ipv6", mutate: func(c *Config) { c.PodCIDR = "fd00::/64" }, wantErr: "only IPv4"},
		{name: "too small", mutate: func(c *Config) { c.PodCIDR = "10.0.0.0/31" }, wantErr: "/30 or larger"},
		{name: "no root", mutate: func(c *Config) { c.RootDir = "" }, wantErr: "rootDir: required"},
		{name: "relative root", mutate: func(c *Config) { c.RootDir = "state" }, wantErr: "absolute"},
		{name: "long bridge", mutate: func(c *Config) { c.BridgeName = "a-very-long-bridge" }, wantErr: "bridgeName"},
		{name: "bad network name", mutate: func(c *Config) { c.NetworkName = "Bad Name" }, wantErr: "networkName"},
		{name: "tiny mtu", mutate: func(c *Config) { c.MTU = 100 }, wantErr: "mtu"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			_, err := New(c, nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("New error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestRuntimeConf(t *testing.T) {
	pod := network.Pod{
		ID: "abc", Namespace: "ns", Name: "web", UID: "u1", NetNS: "/proc/1/ns/net",
		Ports: []network.PortMapping{
			{HostPort: 8080, ContainerPort: 80, Protocol: "TCP"},
			{ContainerPort: 9090, Protocol: "TCP"}, // no hostPort: not published
			{HostPort: 53, ContainerPort: 53, Protocol: "UDP", HostIP: "127.0.0.1"},
			{HostPort: 81, ContainerPort: 81},
		},
	}
	rt := runtimeConf(pod, "eth0")
	got, err := json.Marshal(map[string]any{"id": rt.ContainerID, "netns": rt.NetNS, "if": rt.IfName, "args": rt.Args, "caps": rt.CapabilityArgs})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"args":[["IgnoreUnknown","1"],["K8S_POD_NAMESPACE","ns"],["K8S_POD_NAME","web"],["K8S_POD_INFRA_CONTAINER_ID","abc"],["K8S_POD_UID","u1"]],` +
		`"caps":{"portMappings":[{"hostPort":8080,"containerPort":80,"protocol":"tcp"},{"hostPort":53,"containerPort":53,"protocol":"udp","hostIP":"127.0.0.1"},{"hostPort":81,"containerPort":81,"protocol":"tcp"}]},` +
		`"id":"abc","if":"eth0","netns":"/proc/1/ns/net"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("runtime conf (-want +got):\n%s", diff)
	}
	if rt := runtimeConf(network.Pod{ID: "x"}, "eth0"); rt.CapabilityArgs != nil {
		t.Errorf("pod without hostPorts: capability args = %v, want none", rt.CapabilityArgs)
	}
}

// fakePlugins makes a plugin directory holding executables with the required names; Prepare
// only looks for them.
func fakePlugins(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fakeProcSys(t *testing.T, forward string) string {
	dir := t.TempDir()
	p := filepath.Join(dir, "net", "ipv4")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "ip_forward"), []byte(forward), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPrepare(t *testing.T) {
	tests := []struct {
		name        string
		plugins     []string
		forward     string
		wantErr     string
		wantForward string
	}{
		{name: "enables forwarding", plugins: requiredPlugins, forward: "0\n", wantForward: "1\n"},
		{name: "leaves forwarding on", plugins: requiredPlugins, forward: "1\n", wantForward: "1\n"},
		{name: "names missing plugins", plugins: []string{"bridge", "loopback"}, forward: "0\n",
			wantErr: "plugins host-local, firewall, portmap not found", wantForward: "0\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			procSys := fakeProcSys(t, tc.forward)
			root := t.TempDir()
			n, err := New(Config{PodCIDR: "10.244.3.0/24", RootDir: root, PluginDirs: []string{fakePlugins(t, tc.plugins...)}, ProcSys: procSys}, nil)
			if err != nil {
				t.Fatal(err)
			}
			n.iptablesList = func(context.Context, ...string) (string, error) { return "-P POSTROUTING ACCEPT\n", nil }
			n.iptables = func(_ context.Context, args ...string) error {
				t.Errorf("Prepare ran iptables %q with no old masquerade rule to remove", args)
				return nil
			}
			err = n.Prepare(t.Context())
			if tc.wantErr == "" && err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Prepare error = %v, want one containing %q", err, tc.wantErr)
			}
			b, err := os.ReadFile(filepath.Join(procSys, "net", "ipv4", "ip_forward"))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.wantForward {
				t.Errorf("ip_forward = %q, want %q", b, tc.wantForward)
			}
			if tc.wantErr == "" {
				for _, d := range []string{n.cfg.ipamDataDir(), n.cfg.cacheDir()} {
					if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
						t.Errorf("state dir %s not created: %v", d, err)
					}
				}
			}
		})
	}
}

func TestSetUpRefusesHostNetNS(t *testing.T) {
	n, err := New(Config{PodCIDR: "10.244.3.0/24", RootDir: t.TempDir(),
		PluginDirs: []string{fakePlugins(t, requiredPlugins...)}, ProcSys: fakeProcSys(t, "1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"/proc/self/ns/net", "/nonexistent/netns"} {
		t.Run(ns, func(t *testing.T) {
			// The fake plugins exit 1, so reaching them would fail differently.
			_, err := n.SetUp(t.Context(), network.Pod{ID: "x", Namespace: "ns", Name: "p", NetNS: ns})
			if err == nil || !(strings.Contains(err.Error(), "host's own network namespace") || strings.Contains(err.Error(), errNetNSGone.Error())) {
				t.Fatalf("SetUp error = %v, want a refusal of the netns", err)
			}
		})
	}
}

func TestMasqChainMatchesPlugins(t *testing.T) {
	// The integration suite proves the names match the plugins' (no chain survives a
	// TearDown after the netns is gone); this guards the shape.
	got := masqChain("minik8s", "abc")
	if len(got) != 28 || !strings.HasPrefix(got, "CNI-") {
		t.Fatalf("masqChain = %q, want CNI- and 24 hex digits", got)
	}
	if got == masqChain("minik8s", "abd") {
		t.Fatal("masqChain does not depend on the container id")
	}
	if want := `name: "minik8s" id: "abc"`; masqComment("minik8s", "abc") != want {
		t.Fatalf("masqComment = %q, want %q", masqComment("minik8s", "abc"), want)
	}
}

func TestPrepareRemovesOldBridgeMasquerade(t *testing.T) {
	n, err := New(Config{PodCIDR: "10.244.3.0/24", RootDir: t.TempDir(), PluginDirs: []string{fakePlugins(t, requiredPlugins...)},
		ProcSys: fakeProcSys(t, "1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// As iptables -S prints them: one of ours, one of another network, and others' rules.
	listed := strings.Join([]string{
		"-P POSTROUTING ACCEPT",
		`-A POSTROUTING -m comment --comment "CNI portfwd requiring masquerade" -j CNI-HOSTPORT-MASQ`,
		`-A POSTROUTING -s 10.244.3.5/32 -m comment --comment "name: \"minik8s\" id: \"4f3e01\"" -j CNI-0123456789abcdef01234567`,
		`-A POSTROUTING -s 10.88.0.5/32 -m comment --comment "name: \"podman\" id: \"99\"" -j CNI-aaaaaaaaaaaaaaaaaaaaaaaa`,
		"-A POSTROUTING -s 172.17.0.0/16 ! -o docker0 -j MASQUERADE",
	}, "\n") + "\n"
	n.iptablesList = func(_ context.Context, args ...string) (string, error) {
		if got := strings.Join(args, " "); got != "-t nat -S POSTROUTING" {
			t.Errorf("listed %q", got)
		}
		return listed, nil
	}
	var ran []string
	n.iptables = func(_ context.Context, args ...string) error {
		ran = append(ran, strings.Join(args, " "))
		return nil
	}
	if err := n.Prepare(t.Context()); err != nil {
		t.Fatal(err)
	}
	chain := masqChain("minik8s", "4f3e01")
	want := []string{
		"-t nat -D POSTROUTING -s 10.244.3.5 -j " + chain + ` -m comment --comment name: "minik8s" id: "4f3e01"`,
		"-t nat -F " + chain,
		"-t nat -X " + chain,
	}
	if d := cmp.Diff(want, ran); d != "" {
		t.Errorf("iptables calls (-want +got):\n%s", d)
	}
}
