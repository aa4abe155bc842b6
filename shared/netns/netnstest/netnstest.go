package netnstest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Prefix starts the name of every namespace made here, so the leftovers of an interrupted run
// can be found with `ip netns list | grep mk8st-`.
const Prefix = "mk8st-"

// New creates a network namespace with `ip netns add`, brings its loopback up, and deletes it
// when the test ends; it returns its path under /run/netns. A test that needs one fails with a
// clear message when the machine cannot make it (not root, no iproute2), and skips under
// -short.
func New(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs root and iproute2 (a network namespace); skipped under -short")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := Prefix + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add %s: %v: %s (this test needs root and iproute2; run with -short to skip it)", name, err, out)
	}
	path := filepath.Join("/run/netns", name)
	tb.Cleanup(func() { Delete(tb, path) })
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		tb.Fatalf("ip -n %s link set lo up: %v: %s", name, err, out)
	}
	return path
}

// Delete removes a namespace made by New before the test ends (a node that goes away); one
// already gone is fine.
func Delete(tb testing.TB, path string) {
	tb.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return
	}
	if out, err := exec.Command("ip", "netns", "delete", filepath.Base(path)).CombinedOutput(); err != nil {
		tb.Errorf("ip netns delete %s: %v: %s", path, err, out)
	}
}

// Need fails the test unless every command is on PATH.
func Need(tb testing.TB, commands ...string) {
	tb.Helper()
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			tb.Fatalf("%s is not installed (needed by this test; run with -short to skip it): %v", c, err)
		}
	}
}
