package procstat

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name     string
		stat     string
		children bool
		want     time.Duration
		wantErr  bool
	}{
		{name: "plain", stat: "42 (apiserver) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 0 0",
			want: 3250 * time.Millisecond},
		{name: "command with spaces and parens", stat: "7 (a b) (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 0 0",
			want: 30 * time.Millisecond},
		{name: "own time only", stat: "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 100 50 7 3 20 0", want: 150 * ClockTick},
		{name: "with reaped children", stat: "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 100 50 7 3 20 0", children: true, want: 160 * ClockTick},
		{name: "truncated", stat: "7 (x) R 1 2", wantErr: true},
		{name: "no command", stat: "garbage", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStat(tt.stat, tt.children)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseStat error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseStat = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseCPULine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    time.Duration
		wantErr bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{name: "idle, iowait, steal and guest excluded", line: "cpu  100 1 50 9999 77 2 3 500 40 0", want: 1560 * time.Millisecond},
		{name: "old kernel with four fields", line: "cpu 10 0 10 500", want: 200 * time.Millisecond},
		{name: "per-cpu line refused", line: "cpu0 1 2 3 4 5", wantErr: true},
		{name: "non-numeric", line: "cpu 1 x 3 4 5", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseCPULine(tt.line)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseCPULine error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseCPULine = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFindProcessesFindsItself(t *testing.T) {
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	pids := FindProcesses(strings.TrimSpace(string(comm)))
	if !slices.Contains(pids, os.Getpid()) {
		t.Errorf("FindProcesses(%q) = %v, want it to include this process %d", strings.TrimSpace(string(comm)), pids, os.Getpid())
	}
	if got := FindProcesses("no-such-command-here"); len(got) != 0 {
		t.Errorf("FindProcesses of an absent command = %v, want none", got)
	}
}

func TestSelfAndSumSeeThisProcessWork(t *testing.T) {
	// Burn CPU until /proc, which counts in clock ticks, has counted some of it.
	self := []int{os.Getpid()}
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for Sum(self, false) == 0 {
		for i := range 1_000_000 {
			x += i
		}
		if time.Now().After(deadline) {
			t.Fatal("/proc counted no CPU time for this process after 30 s of work")
		}
	}
	_ = x
	fromProc := Sum(self, false)
	if got := Self(false); got < fromProc-ClockTick {
		t.Errorf("Self = %v, less than /proc's %v for this process", got, fromProc)
	}
	without := Self(false)
	if with := Self(true); with < without {
		t.Errorf("Self with children (%v) is less than without, read before it (%v)", with, without)
	}
	if got := Sum([]int{os.Getpid(), -1}, false); got < fromProc {
		t.Errorf("Sum with a pid that does not exist = %v, want at least this process's %v", got, fromProc)
	}
}

func TestParseRSS(t *testing.T) {
	got, err := ParseRSS("Name:\tprometheus\nVmPeak:\t  900 kB\nVmRSS:\t   51200 kB\nThreads:\t12\n")
	if err != nil || got != 51200*1024 {
		t.Errorf("ParseRSS = %d, %v; want %d", got, err, 51200*1024)
	}
	if _, err := ParseRSS("Name:\tkthreadd\nThreads:\t1\n"); err == nil {
		t.Error("a status without VmRSS (a kernel thread) parsed")
	}
	if rss, err := ProcessRSS(os.Getpid()); err != nil || rss == 0 {
		t.Errorf("ProcessRSS(self) = %d, %v", rss, err)
	}
}
