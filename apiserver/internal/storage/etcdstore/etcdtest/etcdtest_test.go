package etcdtest

import (
	"net"
	"strings"
	"testing"
)

// takePorts makes the first tries picks of ports give a client port that a listener of the
// test holds, and counts the picks.
func takePorts(t *testing.T, tries int) (picks *int, taken string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	picks = new(int)
	pickPorts = func(n int) ([]string, error) {
		*picks++
		ports, err := freePorts(n)
		if err == nil && *picks <= tries {
			ports[0] = l.Addr().String()
		}
		return ports, err
	}
	t.Cleanup(func() { pickPorts = freePorts })
	return picks, l.Addr().String()
}

func TestStartTriesAgainWhenAPortIsTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an embedded etcd; skipped under -short")
	}
	picks, taken := takePorts(t, 2)
	e := Start(t)
	if *picks != 3 {
		t.Errorf("etcd started after %d picks of ports, want 3: two taken, then free ones", *picks)
	}
	if e.URL == "http://"+taken {
		t.Errorf("etcd serves on %s, the port the test holds", e.URL)
	}
	if _, err := e.Store.Create(t.Context(), "/etcdtest/a", []byte("1")); err != nil {
		t.Errorf("Create on the started etcd: %v", err)
	}
}

func TestNewGivesUpOnAPortTakenEveryTime(t *testing.T) {
	picks, _ := takePorts(t, attempts)
	e, err := New(t.Context())
	if err == nil {
		e.Close()
		t.Fatal("New started etcd on a port the test holds")
	}
	if *picks != attempts || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("New after %d picks: %v; want %d picks and the port in use", *picks, err, attempts)
	}
}
