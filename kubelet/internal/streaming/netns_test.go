package streaming

import (
	"bufio"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"minik8s.io/kubelet/internal/network/networktest"
)

// TestDialNetNS reaches a server in another network namespace through its loopback; the same
// port on the host's loopback has nothing.
func TestDialNetNS(t *testing.T) {
	if testing.Short() {
		t.Skip("needs root and iproute2 for a network namespace; skipped under -short")
	}
	path := networktest.NewNetNS(t)
	// A new namespace's loopback is down; a pod sandbox's is up.
	if out, err := exec.Command("ip", "-n", filepath.Base(path), "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v: %s", err, out)
	}
	networktest.Serve(t, path, 18081, "hello from the namespace")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := DialNetNS(ctx, path, 18081)
	if err != nil {
		t.Fatalf("DialNetNS: %v", err)
	}
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if line != "hello from the namespace\n" {
		t.Errorf("read %q, %v; want the namespace's greeting", line, err)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:18081", 5*time.Second); err == nil {
		c.Close()
		t.Error("the host's loopback answered on the namespace's port: the test proves nothing here")
	}
	if _, err := DialNetNS(ctx, path, 18082); err == nil {
		t.Error("a port nothing listens on in the namespace answered")
	}
	if _, err := DialNetNS(ctx, "/proc/0/ns/net", 18081); err == nil {
		t.Error("a namespace that does not exist answered")
	}
}
