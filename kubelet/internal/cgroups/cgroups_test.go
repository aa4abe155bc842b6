package cgroups

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	appID     = "aaaa000000000000000000000000000000000000000000000000000000000001"
	sandboxID = "bbbb000000000000000000000000000000000000000000000000000000000002"
)

// The fake trees in testdata hold the same container in both layouts, so both read the same.
func TestReadContainer(t *testing.T) {
	want := Stats{
		CPU:    CPU{UsageNanos: 12e9, UserNanos: 9.5e9, SystemNanos: 2.5e9},
		Memory: Memory{Usage: 100 << 20, WorkingSet: 80 << 20, RSS: 60 << 20, Cache: 40 << 20, Limit: 256 << 20},
		Tasks:  3,
		IO:     []IODevice{{Major: 8, Minor: 0, ReadBytes: 4096, WriteBytes: 8192, Reads: 1, Writes: 2}},
	}
	for _, tc := range []struct{ name, path string }{
		{"v1", "/docker/" + appID},
		{"v2", "/mk8s-n1/" + appID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := Detect("testdata/" + tc.name + "/cgroup")
			if err != nil {
				t.Fatal(err)
			}
			if h.V2() != (tc.name == "v2") {
				t.Fatalf("V2() = %v", h.V2())
			}
			g, err := h.ForProcess("testdata/"+tc.name+"/proc", 101)
			if err != nil {
				t.Fatal(err)
			}
			if g.Path != tc.path {
				t.Fatalf("path %q, want %q", g.Path, tc.path)
			}
			got, err := g.Read()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("stats (-want +got):\n%s", d)
			}
			// The sandbox has no limit: v2's "max" and v1's page-rounded maximum both read 0.
			sb, err := h.ForProcess("testdata/"+tc.name+"/proc", 202)
			if err != nil {
				t.Fatal(err)
			}
			st, err := sb.Read()
			if err != nil {
				t.Fatal(err)
			}
			if st.Memory.Limit != 0 || st.Memory.WorkingSet != 512<<10 || st.Tasks != 1 {
				t.Fatalf("sandbox: %+v", st)
			}
			if _, err := h.ForPath("/docker/gone").Read(); !errors.Is(err, ErrGone) {
				t.Fatalf("a missing group: %v, want ErrGone", err)
			}
		})
	}
}

func TestReadNodeGroup(t *testing.T) {
	h, err := Detect("testdata/v2/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.ForPath("mk8s-n1").Read()
	if err != nil {
		t.Fatal(err)
	}
	if st.CPU.UsageNanos != 12.5e9 || st.Memory.WorkingSet != 150<<20 || st.Memory.Limit != 0 {
		t.Fatalf("node group: %+v", st)
	}
	root, err := h.ForPath("/").Read()
	if err != nil {
		t.Fatal(err)
	}
	if root.CPU.UsageNanos != 900e9 || root.Memory != (Memory{}) {
		t.Fatalf("root: %+v", root)
	}
}

func TestDetectRefusesOther(t *testing.T) {
	if _, err := Detect(t.TempDir()); err == nil {
		t.Fatal("an empty directory detected as a cgroup mount")
	}
}

func TestParseProcCgroup(t *testing.T) {
	v1, unified, err := ParseProcCgroup([]byte("2:cpu,cpuacct:/a\n4:memory:/b\n1:name=systemd:/c\n0::/d\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"cpu": "/a", "cpuacct": "/a", "memory": "/b", "name=systemd": "/c"}
	if d := cmp.Diff(want, v1); d != "" || unified != "/d" {
		t.Fatalf("v1 (-want +got):\n%s\nunified %q", d, unified)
	}
	if _, _, err := ParseProcCgroup([]byte("garbage\n")); err == nil {
		t.Fatal("a malformed line parsed")
	}
}

func TestNetDev(t *testing.T) {
	got, err := NetDev("testdata/v2/proc", 202)
	if err != nil {
		t.Fatal(err)
	}
	want := []Interface{{Name: "eth0", RxBytes: 5000, RxPackets: 50, RxErrors: 1, RxDropped: 2,
		TxBytes: 3000, TxPackets: 30, TxErrors: 3, TxDropped: 4}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if _, err := ParseNetDev([]byte("eth0: 1 2 3\n")); err == nil {
		t.Fatal("a short line parsed")
	}
	if _, err := NetDev("testdata/v2/proc", 999); !errors.Is(err, ErrGone) {
		t.Fatalf("a missing pid: %v", err)
	}
}

func TestMachine(t *testing.T) {
	cpu, err := MachineCPU("testdata/v2/proc")
	if err != nil {
		t.Fatal(err)
	}
	// user 50000 + nice 1000, system 20000 + irq 500 + softirq 500, in 10 ms ticks.
	want := CPU{UsageNanos: 72000 * 1e7, UserNanos: 51000 * 1e7, SystemNanos: 21000 * 1e7}
	if cpu != want {
		t.Fatalf("cpu %+v, want %+v", cpu, want)
	}
	info, err := Meminfo("testdata/v2/proc")
	if err != nil {
		t.Fatal(err)
	}
	mem := MachineMemory(info)
	wantMem := Memory{Usage: 4 << 30, WorkingSet: 4<<30 - 512<<20, RSS: 4<<30 - 1124<<20, Cache: 1124 << 20, Limit: 8 << 30}
	if mem != wantMem {
		t.Fatalf("memory %+v, want %+v", mem, wantMem)
	}
	if _, err := ParseStat([]byte("intr 0\n")); err == nil {
		t.Fatal("no cpu line parsed")
	}
}
