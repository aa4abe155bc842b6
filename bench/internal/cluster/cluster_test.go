package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFreePorts(t *testing.T) {
	ports, err := FreePorts(4)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p > 65535 || seen[p] {
			t.Fatalf("FreePorts = %v: want 4 distinct ports", ports)
		}
		seen[p] = true
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\nd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n    int
		want string
	}{
		{2, "c\nd"},
		{10, "a\nb\nc\nd"},
	}
	for _, tt := range tests {
		if got := tail(path, tt.n); got != tt.want {
			t.Errorf("tail(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestStartFailsForMissingBinary(t *testing.T) {
	home := t.TempDir()
	_, err := Start(t.Context(), Options{Binary: filepath.Join(home, "no-such-apiserver"), Home: home})
	if err == nil || !strings.Contains(err.Error(), "start apiserver") {
		t.Fatalf("Start with a missing binary: err = %v, want a start error", err)
	}
}

// TestStartReportsEarlyExit starts a "binary" that exits at once and checks
// that Start says so, with the log, instead of waiting for readiness.
func TestStartReportsEarlyExit(t *testing.T) {
	home := t.TempDir()
	bin := filepath.Join(home, "fake-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'listen tcp: address already in use' >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(t.Context(), Options{Binary: bin, Home: home})
	if err == nil {
		t.Fatal("Start of an exiting binary: want error")
	}
	for _, want := range []string{"exited before it was ready", "address already in use"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error lacks %q: %v", want, err)
		}
	}
}

// TestStartRetriesATakenPort starts a "binary" that always finds its secure port taken:
// Start must try three times, each with another port in place of the taken one.
func TestStartRetriesATakenPort(t *testing.T) {
	home := t.TempDir()
	calls := filepath.Join(home, "calls")
	bin := filepath.Join(home, "fake-apiserver")
	script := "#!/bin/sh\necho \"$@\" >> " + calls + "\n" +
		"while [ $# -gt 0 ]; do if [ \"$1\" = --secure-port ]; then port=$2; fi; shift; done\n" +
		"echo \"listen: listen tcp 127.0.0.1:$port: bind: address already in use\" >&2\nexit 1\n"
	if err := os.WriteFile(bin, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(t.Context(), Options{Binary: bin, Home: home})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start = %v, want the bind error", err)
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, line := range lines {
		f := strings.Fields(line)
		for i := range f[:len(f)-1] {
			if f[i] == "--secure-port" {
				ports[f[i+1]] = true
			}
		}
	}
	if len(lines) != 3 || len(ports) != 3 {
		t.Errorf("%d starts with %d distinct secure ports, want 3 and 3:\n%s", len(lines), len(ports), data)
	}
}
