package proxier

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"minik8s.io/kubeproxy/internal/netfilter/iptables"
	"minik8s.io/kubeproxy/internal/netns"
	"minik8s.io/kubeproxy/internal/netns/netnstest"
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
	if n := tables.restores.Load(); n != 1 || res.PayloadBytes != 0 || res.JumpsAdded != 0 {
		t.Errorf("restart: %d restores in all, result %+v; want the first restore only", n, res)
	}
}
