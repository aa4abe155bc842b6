package nodestatus

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/cgroups"
)

func TestParseMeminfo(t *testing.T) {
	data := []byte("MemTotal:        8029544 kB\nMemFree:          123 kB\nMemAvailable:    4000000 kB\nHugePages_Total:       0\n")
	tests := []struct {
		field   string
		want    int64
		wantErr bool
	}{
		{"MemTotal", 8029544 * 1024, false},
		{"MemAvailable", 4000000 * 1024, false},
		{"HugePages_Total", 0, false},
		{"Mem", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			got, err := meminfoField(cgroups.ParseMeminfo(data), tt.field)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("meminfoField(%s) = %d, %v; want %d, error %v", tt.field, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestOSReleaseValue(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"quoted", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "Debian GNU/Linux 12 (bookworm)"},
		{"bare", "PRETTY_NAME=Alpine\n", "Alpine"},
		{"single quotes", "PRETTY_NAME='Fedora 40'\n", "Fedora 40"},
		{"missing", "NAME=x\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := osReleaseValue([]byte(tt.data), "PRETTY_NAME"); got != tt.want {
				t.Errorf("PRETTY_NAME = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultRouteInterfaces(t *testing.T) {
	route := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"wlan0\t00000000\t0101A8C0\t0003\t0\t0\t600\t00000000\t0\t0\t0\n" +
		"eth0\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n" +
		"eth0\t0000000A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n"
	if diff := cmp.Diff([]string{"eth0", "wlan0"}, defaultRouteInterfaces([]byte(route))); diff != "" {
		t.Errorf("default route interfaces, lowest metric first (-want +got):\n%s", diff)
	}
}

// TestLinuxHost reads this machine: the values must be plausible, not exact.
func TestLinuxHost(t *testing.T) {
	h := LinuxHost{}
	if h.CPU() < 1 {
		t.Errorf("CPU() = %d", h.CPU())
	}
	total, err := h.MemoryTotal()
	if err != nil || total < 64<<20 {
		t.Errorf("MemoryTotal() = %d, %v", total, err)
	}
	avail, err := h.MemoryAvailable()
	if err != nil || avail <= 0 || avail > total {
		t.Errorf("MemoryAvailable() = %d, %v; total %d", avail, err, total)
	}
	d, err := h.DiskStats("/")
	if err != nil || d.Capacity <= 0 || d.Available < 0 || d.Available > d.Capacity {
		t.Errorf("DiskStats(/) = %+v, %v", d, err)
	}
	if k, err := h.Kernel(); err != nil || k == "" {
		t.Errorf("Kernel() = %q, %v", k, err)
	}
	if o, err := h.OSImage(); err != nil || o == "" {
		t.Errorf("OSImage() = %q, %v", o, err)
	}
	addrs, err := h.Addresses()
	if err != nil {
		t.Fatalf("Addresses(): %v", err)
	}
	if len(addrs) == 0 || addrs[0].Type != corev1.NodeInternalIP {
		t.Fatalf("Addresses() = %v, want an InternalIP first", addrs)
	}
	if ip, err := netip.ParseAddr(addrs[0].Address); err != nil || !ip.Is4() || ip.IsLoopback() {
		t.Errorf("InternalIP %q is not a non-loopback IPv4 address", addrs[0].Address)
	}
}
