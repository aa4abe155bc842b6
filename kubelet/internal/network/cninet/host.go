package cninet

import (
	"bytes"
	"context"
	"crypto/sha512"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// ensureForwarding turns on net.ipv4.ip_forward: pods reach anything beyond the bridge only
// through the host's routing.
func (n *Network) ensureForwarding(ctx context.Context) error {
	p := filepath.Join(n.cfg.ProcSys, "net", "ipv4", "ip_forward")
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read ip_forward: %w", err)
	}
	if strings.TrimSpace(string(b)) == "1" {
		return nil
	}
	if err := os.WriteFile(p, []byte("1\n"), 0o644); err != nil {
		return fmt.Errorf("enable ip_forward: %w", err)
	}
	n.logger.InfoContext(ctx, "enabled IPv4 forwarding", "sysctl", "net.ipv4.ip_forward")
	return nil
}

var errNetNSGone = errors.New("network namespace is gone")

// checkNetNS rejects a netns path that does not exist or that is the kubelet's own namespace.
// A /proc/<pid>/ns/net path outlives nothing: once the sandbox dies the pid can belong to a
// host process, and a DEL there would delete the host's eth0.
func checkNetNS(path string) error {
	if path == "" {
		return errNetNSGone
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("netns %s: %w", path, errors.Join(errNetNSGone, err))
	}
	self, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return nil // cannot compare; trust the path
	}
	a, aok := fi.Sys().(*syscall.Stat_t)
	b, bok := self.Sys().(*syscall.Stat_t)
	if aok && bok && a.Dev == b.Dev && a.Ino == b.Ino {
		return fmt.Errorf("netns %s is the host's own network namespace", path)
	}
	return nil
}

// masqChain names the per-sandbox nat chain the bridge plugin creates for ipMasq, as the
// plugins do: "CNI-" and a sha512 of network name and container id, 28 characters in all.
func masqChain(network, id string) string {
	sum := sha512.Sum512([]byte(network + id))
	return fmt.Sprintf("CNI-%x", sum)[:28]
}

func masqComment(network, id string) string {
	return fmt.Sprintf("name: %q id: %q", network, id)
}

// removeMasq deletes the bridge plugin's masquerade rule and chain for a sandbox. Failures
// are logged, not returned: the address is already released and the chain is inert.
func (n *Network) removeMasq(ctx context.Context, id string, ips []string) {
	chain := masqChain(n.cfg.NetworkName, id)
	comment := masqComment(n.cfg.NetworkName, id)
	var cmds [][]string
	for _, ip := range ips {
		cmds = append(cmds, []string{"-t", "nat", "-D", "POSTROUTING", "-s", ip, "-j", chain, "-m", "comment", "--comment", comment})
	}
	cmds = append(cmds, []string{"-t", "nat", "-F", chain}, []string{"-t", "nat", "-X", chain})
	for _, args := range cmds {
		if err := n.iptables(ctx, args...); err != nil && !errors.Is(err, errNotFound) {
			n.logger.WarnContext(ctx, "remove masquerade rule", "sandbox", id, "chain", chain, "err", err)
		}
	}
}

// bridgeMasqRE matches the rule the bridge plugin added to nat POSTROUTING for a pod when the
// network still had ipMasq: the pod's address, then the comment naming network and sandbox.
var bridgeMasqRE = regexp.MustCompile(`^-A POSTROUTING -s ([0-9.]+)(?:/32)? .*--comment "name: \\"([^"\\]+)\\" id: \\"([^"\\]+)\\"" -j CNI-`)

// removeBridgeMasq removes what the bridge plugin's ipMasq left for pods attached before the
// network stopped using it: their masquerade would NAT them towards other nodes' pods too.
// Failures are logged: the pods keep working, only with their old NAT.
func (n *Network) removeBridgeMasq(ctx context.Context) {
	out, err := n.iptablesList(ctx, "-t", "nat", "-S", "POSTROUTING")
	if err != nil {
		n.logger.WarnContext(ctx, "list nat POSTROUTING for old masquerade rules", "err", err)
		return
	}
	for _, line := range strings.Split(out, "\n") {
		m := bridgeMasqRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || m[2] != n.cfg.NetworkName {
			continue
		}
		n.logger.InfoContext(ctx, "removing the bridge plugin's masquerade of an older pod", "sandbox", m[3], "ip", m[1])
		n.removeMasq(ctx, m[3], []string{m[1]})
	}
}

var errNotFound = errors.New("iptables: no such rule or chain")

func execIPTablesOutput(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "iptables", append([]string{"-w", "5"}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("iptables %s: %s: %w", strings.Join(args, " "), strings.TrimSpace(stderr.String()), err)
	}
	return string(out), nil
}

func execIPTables(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "iptables", append([]string{"-w", "5"}, args...)...)
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	// iptables exits 1 for a missing rule or chain, with wording that differs between the
	// legacy and nft variants.
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return fmt.Errorf("iptables %s: %s: %w", strings.Join(args, " "), strings.TrimSpace(stderr.String()), errNotFound)
	}
	return fmt.Errorf("iptables %s: %s: %w", strings.Join(args, " "), strings.TrimSpace(stderr.String()), err)
}
