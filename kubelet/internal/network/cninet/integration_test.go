package cninet

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"minik8s.io/kubelet/internal/network/networktest"
)

// Integration: real plugins from /usr/lib/cni, real namespaces, bridges and iptables. Needs
// root. Skipped only under -short.

var envSeq atomic.Int32

func requireHost(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs root and the CNI plugins; skipped under -short")
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		t.Fatalf("CNI plugins missing: %v (apt-get install containernetworking-plugins)", err)
	}
	if os.Geteuid() != 0 {
		t.Fatal("integration test needs root (network namespaces, bridges, iptables)")
	}
}

// newRealEnv gives each case its own bridge, network name and state dir, and checks at the end
// that nothing the plugins made for it is left behind.
func newRealEnv(t *testing.T, cidr string) networktest.Env {
	requireHost(t)
	name := fmt.Sprintf("mk8st%d-%d", os.Getpid()%100000, envSeq.Add(1))
	n, err := New(Config{PodCIDR: cidr, RootDir: t.TempDir(), NetworkName: name, BridgeName: name},
		slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	// Registered before any pod, so it runs after every pod is torn down.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		removeLeftoverRules(ctx, t, name, cidr)
		if out, err := exec.CommandContext(ctx, "ip", "link", "del", name).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "Cannot find device") {
			t.Errorf("delete bridge %s: %v: %s", name, err, out)
		}
	})
	if err := n.Prepare(t.Context()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return networktest.Env{
		Net:  n,
		Real: true,
		Allocated: func(t *testing.T) []string {
			entries, err := os.ReadDir(n.cfg.ipamDir())
			if os.IsNotExist(err) {
				return nil
			}
			if err != nil {
				t.Fatalf("read host-local dir: %v", err)
			}
			var ips []string
			for _, e := range entries {
				if _, err := netip.ParseAddr(e.Name()); err == nil {
					ips = append(ips, e.Name())
				}
			}
			return ips
		},
	}
}

func TestContractCNI(t *testing.T) {
	networktest.Run(t, newRealEnv)
}

// removeLeftoverRules fails the test for any iptables rule that still names this network or
// its CIDR after every pod was torn down, then deletes them so the host stays clean.
func removeLeftoverRules(ctx context.Context, t *testing.T, name, cidr string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "iptables-save").Output()
	if err != nil {
		t.Errorf("iptables-save: %v", err)
		return
	}
	p := netip.MustParsePrefix(cidr)
	octets := strings.Split(p.Addr().String(), ".")
	netText := strings.Join(octets[:3], ".") + "."
	nameText := fmt.Sprintf(`name: \"%s\"`, name)
	chainRE := regexp.MustCompile(`-j (CNI-(?:DN-)?[0-9a-f]{20,24})\b`)

	var restore bytes.Buffer
	table := ""
	var left []string
	var chains []string
	flush := func() {
		for _, c := range chains {
			fmt.Fprintf(&restore, "-F %s\n-X %s\n", c, c)
		}
		chains = nil
		if table != "" {
			restore.WriteString("COMMIT\n")
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			table = line[1:]
			fmt.Fprintf(&restore, "*%s\n", table)
		case line == "COMMIT":
			flush()
			table = ""
		case strings.HasPrefix(line, "-A ") && (strings.Contains(line, nameText) || strings.Contains(line, netText)):
			left = append(left, table+": "+line)
			fmt.Fprintf(&restore, "-D %s\n", line[3:])
			if m := chainRE.FindStringSubmatch(line); m != nil {
				chains = append(chains, m[1])
			}
		}
	}
	if len(left) == 0 {
		return
	}
	t.Errorf("the plugins left %d iptables rules for %s after TearDown:\n%s", len(left), name, strings.Join(left, "\n"))
	cmd := exec.CommandContext(ctx, "iptables-restore", "-w", "5", "--noflush")
	cmd.Stdin = &restore
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("remove leftover rules: %v: %s\ninput:\n%s", err, out, restore.String())
	}
}
