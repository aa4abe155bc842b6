package nodestatus

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// FakeHost is a Host whose facts tests set. NewFakeHost gives a 4-core, 8 GiB machine with
// plenty free, at 10.0.0.10. It is safe for concurrent use.
type FakeHost struct {
	mu        sync.Mutex
	cpu       int
	memTotal  int64
	memAvail  int64
	disk      DiskStats
	kernel    string
	osImage   string
	addresses []corev1.NodeAddress
	err       error
	diskPaths []string
}

var _ Host = (*FakeHost)(nil)

// NewFakeHost returns the default fake machine.
func NewFakeHost() *FakeHost {
	return &FakeHost{
		cpu:      4,
		memTotal: 8 << 30,
		memAvail: 6 << 30,
		disk:     DiskStats{Capacity: 100 << 30, Available: 60 << 30},
		kernel:   "6.1.0-fake",
		osImage:  "Debian GNU/Linux 12 (bookworm)",
		addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "10.0.0.10"},
			{Type: corev1.NodeHostName, Address: "fakehost"},
		},
	}
}

// SetMemoryAvailable changes the free memory the host reports.
func (h *FakeHost) SetMemoryAvailable(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.memAvail = n
}

// SetDisk changes the filesystem the host reports.
func (h *FakeHost) SetDisk(d DiskStats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.disk = d
}

// SetAddresses changes the addresses the host reports.
func (h *FakeHost) SetAddresses(a []corev1.NodeAddress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addresses = a
}

// SetError makes every fallible call fail with err (nil restores them).
func (h *FakeHost) SetError(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

// DiskPaths are the paths DiskStats was asked about, in order.
func (h *FakeHost) DiskPaths() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.diskPaths...)
}

func (h *FakeHost) CPU() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cpu
}

func (h *FakeHost) MemoryTotal() (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.memTotal, h.err
}

func (h *FakeHost) MemoryAvailable() (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.memAvail, h.err
}

func (h *FakeHost) DiskStats(path string) (DiskStats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.diskPaths = append(h.diskPaths, path)
	return h.disk, h.err
}

func (h *FakeHost) Kernel() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kernel, h.err
}

func (h *FakeHost) OSImage() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.osImage, h.err
}

func (h *FakeHost) Addresses() ([]corev1.NodeAddress, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]corev1.NodeAddress(nil), h.addresses...), h.err
}
