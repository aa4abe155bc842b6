package proxier

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/netfilter/iptables"
	"minik8s.io/kubeproxy/internal/rules"
	"minik8s.io/shared/netns"
	"minik8s.io/shared/netns/netnstest"
)

// countingTables counts restores of the real adapter.
type countingTables struct {
	*iptables.Tables
	restores atomic.Int32
}

func (c *countingTables) Restore(ctx context.Context, payload []byte) error {
	c.restores.Add(1)
	return c.Tables.Restore(ctx, payload)
}

// TestKernelTrafficAcrossRestart programs a ClusterIP in a throwaway namespace whose endpoint
// is a server on a local dummy address, and connects through it while a second proxier (a
// restarted kubeproxy) takes over: every connection succeeds, and the restart restores
// nothing, since the kernel already holds the rules.
func TestKernelTrafficAcrossRestart(t *testing.T) {
	netnstest.Need(t, "ip", "iptables", "iptables-restore", "iptables-save")
	ns := netnstest.New(t)
	name := filepath.Base(ns)
	for _, args := range [][]string{
		// The "pod" is a local address; the service range is routed out of a veth, as from a
		// node (some kernels, such as CI's containers, have no dummy links).
		{"addr", "add", "10.244.1.2/32", "dev", "lo"},
		{"link", "add", "kp0", "type", "veth", "peer", "name", "kp1"},
		{"link", "set", "kp0", "up"},
		{"link", "set", "kp1", "up"},
		{"route", "add", "10.96.0.0/12", "dev", "kp0"},
	} {
		if out, err := exec.Command("ip", append([]string{"-n", name}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var ln net.Listener
	if err := netns.Do(ns, func() (err error) { ln, err = net.Listen("tcp4", "10.244.1.2:8080"); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "pod\n")
			c.Close()
		}
	}()
	dial := func() error {
		var c net.Conn
		err := netns.Do(ns, func() (err error) { c, err = net.DialTimeout("tcp4", "10.96.0.10:80", 2*time.Second); return err })
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		_, err = io.ReadAll(c)
		return err
	}

	adapter, err := iptables.New(iptables.Config{NetNS: ns})
	if err != nil {
		t.Fatal(err)
	}
	tables := &countingTables{Tables: adapter}
	newP := func() *Proxier {
		return New(Config{Tables: tables, Options: opts, Logger: slog.New(slog.DiscardHandler)})
	}
	if err := dial(); err == nil {
		t.Fatal("the ClusterIP answered before any rule existed")
	}
	if _, err := newP().Sync(t.Context(), ports("10.244.1.2")); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err != nil {
		t.Fatalf("through the ClusterIP: %v", err)
	}

	// The first proxier is gone (kubeproxy stopped: nothing is flushed); traffic flows on,
	// and keeps flowing while the next one starts and syncs.
	stop := make(chan struct{})
	var ok, failed atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := dial(); err != nil {
				failed.Add(1)
				t.Logf("dial during restart: %v", err)
			} else {
				ok.Add(1)
			}
		}
	}()
	for ok.Load() < 5 {
		time.Sleep(10 * time.Millisecond)
	}
	res, err := newP().Sync(t.Context(), ports("10.244.1.2"))
	for ok.Load() < 10 {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if failed.Load() != 0 {
		t.Errorf("%d of %d connections failed across the restart", failed.Load(), failed.Load()+ok.Load())
	}
	if n := tables.restores.Load(); n != 1 || res.PayloadBytes != 0 || res.JumpChainsFixed != 0 {
		t.Errorf("restart: %d restores in all, result %+v; want the first restore only", n, res)
	}
}

// TestKernelCheckPutsJumpsAboveCNI reproduces a node where the CNI firewall plugin inserts its
// FORWARD jump (accepting everything from pods) at the top after kubeproxy has synced: a pod's
// connection to a ClusterIP without endpoints then passes FORWARD before our REJECT and is
// routed out of the node. The next periodic Check moves our jumps back on top, and the pod
// gets "connection refused" again.
func TestKernelCheckPutsJumpsAboveCNI(t *testing.T) {
	netnstest.Need(t, "ip", "iptables", "iptables-restore", "iptables-save")
	node, pod := netnstest.New(t), netnstest.New(t)
	nodeName, podName := filepath.Base(node), filepath.Base(pod)
	for _, args := range [][]string{
		// The pod: 10.244.1.5 behind veth kppod, its default route through the node.
		{"-n", nodeName, "link", "add", "kppod", "type", "veth", "peer", "name", "eth0", "netns", podName},
		{"-n", nodeName, "addr", "add", "10.244.1.1/24", "dev", "kppod"},
		{"-n", nodeName, "link", "set", "kppod", "up"},
		{"-n", podName, "addr", "add", "10.244.1.5/24", "dev", "eth0"},
		{"-n", podName, "link", "set", "eth0", "up"},
		{"-n", podName, "route", "add", "default", "via", "10.244.1.1"},
		// The node routes the service range out of another veth, whose far end (in the pod's
		// namespace, which does not forward) drops what arrives: "beyond the machine".
		{"-n", nodeName, "link", "add", "kpout", "type", "veth", "peer", "name", "sink", "netns", podName},
		{"-n", nodeName, "link", "set", "kpout", "up"},
		{"-n", podName, "link", "set", "sink", "up"},
		{"-n", nodeName, "route", "add", "10.96.0.0/12", "dev", "kpout"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	if err := netns.Do(node, func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	// dial connects from the pod to web's ClusterIP, which has no endpoints.
	dial := func() error {
		return netns.Do(pod, func() error {
			c, err := net.DialTimeout("tcp4", "10.96.0.10:80", time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
	}

	tables, err := iptables.New(iptables.Config{NetNS: node})
	if err != nil {
		t.Fatal(err)
	}
	p := New(Config{Tables: tables, Options: opts, Logger: slog.New(slog.DiscardHandler)})
	if _, err := p.Sync(t.Context(), ports()); err != nil {
		t.Fatal(err)
	}
	if err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after the sync: %v, want connection refused", err)
	}

	for _, args := range [][]string{
		{"-N", "CNI-FORWARD"},
		{"-A", "CNI-FORWARD", "-s", "10.244.1.5/32", "-j", "ACCEPT"},
		{"-I", "FORWARD", "1", "-m", "comment", "--comment", "CNI firewall plugin rules", "-j", "CNI-FORWARD"},
	} {
		if out, err := exec.Command("ip", append([]string{"netns", "exec", nodeName, "iptables", "-w", "5"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("iptables %v: %v: %s", args, err, out)
		}
	}
	if err := dial(); errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatal("dial with the CNI jump above ours was refused; the test does not reproduce the bug")
	}

	for i := range 2 {
		if ok, err := p.Check(t.Context()); !ok || err != nil {
			t.Fatalf("check #%d: %v, %v", i+1, ok, err)
		}
		if err := dial(); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial after check #%d: %v, want connection refused", i+1, err)
		}
		var want []netfilter.Key
		for _, j := range rules.Jumps() {
			if j.Table == rules.TableFilter && j.Chain == "FORWARD" {
				k, _ := netfilter.KeyOf(j.Rule)
				want = append(want, k)
			}
		}
		want = append(want, netfilter.Key{Comment: "CNI firewall plugin rules", Target: "CNI-FORWARD"})
		if diff := cmp.Diff(want, forwardKeys(t, nodeName)); diff != "" {
			t.Errorf("FORWARD after check #%d (-want +got):\n%s", i+1, diff)
		}
	}
}

// forwardKeys lists filter FORWARD in the namespace and returns its rules' keys, top first.
func forwardKeys(t *testing.T, ns string) []netfilter.Key {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "iptables", "-w", "5", "-S", "FORWARD").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -S FORWARD: %v: %s", err, out)
	}
	var keys []netfilter.Key
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(line, "-A ") {
			continue
		}
		args, err := netfilter.SplitRule(line)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := netfilter.KeyOf(args)
		if !ok {
			t.Fatalf("FORWARD holds a rule without comment or target: %s", line)
		}
		keys = append(keys, k)
	}
	return keys
}
