package localaddr

import (
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"minik8s.io/shared/netns"
	"minik8s.io/shared/netns/netnstest"
)

// TestEnsure makes 169.254.20.10 local in a fresh namespace, twice, and listens on it.
func TestEnsure(t *testing.T) {
	netnstest.Need(t, "ip")
	ns := netnstest.New(t)
	addr := netip.MustParseAddr("169.254.20.10")
	var first, second string
	err := netns.Do(ns, func() (err error) {
		if first, err = Ensure(addr, DefaultLink); err != nil {
			return err
		}
		second, err = Ensure(addr, DefaultLink)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if first != second || (first != DefaultLink && first != "lo") {
		t.Errorf("address on %q, then %q; want %s (or lo without dummy links) both times", first, second, DefaultLink)
	}
	out, err := exec.Command("ip", "-n", filepath.Base(ns), "-4", "-o", "addr", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr: %v: %s", err, out)
	}
	var holders []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, " 169.254.20.10/32 ") {
			holders = append(holders, strings.Fields(line)[1])
		}
	}
	if !slices.Equal(holders, []string{first}) {
		t.Errorf("links with the address: %q, want [%s]\n%s", holders, first, out)
	}
	if err := netns.Do(ns, func() error {
		ln, err := net.Listen("tcp4", "169.254.20.10:53")
		if err == nil {
			ln.Close()
		}
		return err
	}); err != nil {
		t.Errorf("listen on the address: %v", err)
	}
}

// TestEnsureLoopbackRange leaves an address of 127.0.0.0/8 alone: it is local already.
func TestEnsureLoopbackRange(t *testing.T) {
	ns := netnstest.New(t)
	var got string
	if err := netns.Do(ns, func() (err error) { got, err = Ensure(netip.MustParseAddr("127.0.0.153"), DefaultLink); return err }); err != nil {
		t.Fatal(err)
	}
	if got != "local" {
		t.Errorf("127.0.0.153 put on %q; want it left alone", got)
	}
}
