package nodestatus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/cgroups"
)

// Host is what the node reports about its machine.
type Host interface {
	// CPU is the number of cores the kubelet may use.
	CPU() int
	// MemoryTotal and MemoryAvailable are in bytes, as /proc/meminfo has them.
	MemoryTotal() (int64, error)
	MemoryAvailable() (int64, error)
	DiskStats(path string) (DiskStats, error)
	// Kernel is the kernel release (uname -r); OSImage the distribution's pretty name.
	Kernel() (string, error)
	OSImage() (string, error)
	// Addresses are the machine's InternalIP and Hostname.
	Addresses() ([]corev1.NodeAddress, error)
}

// DiskStats describe the filesystem holding a path, in bytes.
type DiskStats struct {
	Capacity  int64
	Available int64 // to unprivileged users, as df shows it
}

// LinuxHost reads the facts from /proc, /etc/os-release and system calls. Inside a network
// namespace (a simulated node) /proc/net/route is that namespace's, so the address is too.
type LinuxHost struct{}

var _ Host = LinuxHost{}

// CPU honours the process' CPU affinity, so a kubelet pinned to some cores reports those.
func (LinuxHost) CPU() int { return runtime.NumCPU() }

func (LinuxHost) MemoryTotal() (int64, error)     { return meminfo("MemTotal") }
func (LinuxHost) MemoryAvailable() (int64, error) { return meminfo("MemAvailable") }

func meminfo(field string) (int64, error) {
	info, err := cgroups.Meminfo("/proc")
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	return meminfoField(info, field)
}

// meminfoField is one field of a parsed /proc/meminfo, in bytes.
func meminfoField(info map[string]uint64, field string) (int64, error) {
	n, ok := info[field]
	if !ok {
		return 0, fmt.Errorf("meminfo: no %s", field)
	}
	return int64(n), nil
}

func (LinuxHost) DiskStats(path string) (DiskStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return DiskStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := int64(st.Bsize) //nolint:unconvert // int64 on amd64, int32 elsewhere
	return DiskStats{Capacity: int64(st.Blocks) * bs, Available: int64(st.Bavail) * bs}, nil
}

func (LinuxHost) Kernel() (string, error) {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return "", fmt.Errorf("uname: %w", err)
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String(), nil
}

func (LinuxHost) OSImage() (string, error) {
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		data, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read os-release: %w", err)
		}
		if v := osReleaseValue(data, "PRETTY_NAME"); v != "" {
			return v, nil
		}
	}
	// What Kubernetes reports when it cannot tell.
	return "Unknown", nil
}

// osReleaseValue reads KEY=value or KEY="value" from an os-release file.
func osReleaseValue(data []byte, key string) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || k != key {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil {
			return uq
		}
		return strings.Trim(v, `"'`)
	}
	return ""
}

func (LinuxHost) Addresses() ([]corev1.NodeAddress, error) {
	var out []corev1.NodeAddress
	ip, err := defaultRouteIPv4()
	if err != nil {
		return nil, err
	}
	out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	if h, err := os.Hostname(); err == nil {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeHostName, Address: strings.ToLower(h)})
	}
	return out, nil
}

// defaultRouteIPv4 is the IPv4 address of the interface the default route leaves by; without
// a default route (an isolated network namespace) it falls back to the first global IPv4
// address of an interface that is up.
func defaultRouteIPv4() (string, error) {
	var candidates []string
	if data, err := os.ReadFile("/proc/net/route"); err == nil {
		candidates = defaultRouteInterfaces(data)
	}
	for _, name := range candidates {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			continue
		}
		if ip := firstIPv4(ifc); ip != "" {
			return ip, nil
		}
	}
	ifcs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	for i := range ifcs {
		if ifcs[i].Flags&net.FlagUp == 0 || ifcs[i].Flags&net.FlagLoopback != 0 {
			continue
		}
		if ip := firstIPv4(&ifcs[i]); ip != "" {
			return ip, nil
		}
	}
	return "", errors.New("no IPv4 address on any interface: set addresses.internalIP in the node config")
}

// defaultRouteInterfaces lists the interfaces of default routes in /proc/net/route, lowest
// metric first.
func defaultRouteInterfaces(data []byte) []string {
	type route struct {
		iface  string
		metric int
	}
	var routes []route
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		m, _ := strconv.Atoi(f[6])
		routes = append(routes, route{f[0], m})
	}
	sort.SliceStable(routes, func(i, j int) bool { return routes[i].metric < routes[j].metric })
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = r.iface
	}
	return out
}

func firstIPv4(ifc *net.Interface) string {
	addrs, err := ifc.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil && ip4.IsGlobalUnicast() {
			return ip4.String()
		}
	}
	return ""
}
