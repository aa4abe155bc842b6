package fake_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"minik8s.io/kubelet/internal/network"
	"minik8s.io/kubelet/internal/network/fake"
	"minik8s.io/kubelet/internal/network/networktest"
)

func TestContract(t *testing.T) {
	networktest.Run(t, func(t *testing.T, cidr string) networktest.Env {
		n := fake.New(cidr)
		return networktest.Env{
			Net:       n,
			Allocated: func(*testing.T) []string { return slices.Collect(maps.Values(n.Attached())) },
		}
	})
}

func TestAllocationOrder(t *testing.T) {
	tests := []struct {
		name string
		cidr string
		ops  []string // "+id" sets up, "-id" tears down
		want []string // addresses returned by the set ups, in order; "err" for a failure
	}{
		{name: "starts after the gateway", cidr: "10.1.0.0/24", ops: []string{"+a", "+b"}, want: []string{"10.1.0.2", "10.1.0.3"}},
		{name: "does not reuse a released address at once", cidr: "10.1.0.0/24", ops: []string{"+a", "-a", "+b"}, want: []string{"10.1.0.2", "10.1.0.3"}},
		{name: "wraps around to released addresses", cidr: "10.1.0.0/29", ops: []string{"+a", "+b", "+c", "+d", "+e", "-b", "+f"}, want: []string{"10.1.0.2", "10.1.0.3", "10.1.0.4", "10.1.0.5", "10.1.0.6", "10.1.0.3"}},
		{name: "exhausted", cidr: "10.1.0.0/30", ops: []string{"+a", "+b"}, want: []string{"10.1.0.2", "err"}},
		{name: "unmasked cidr is masked", cidr: "10.1.0.77/24", ops: []string{"+a"}, want: []string{"10.1.0.2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := fake.New(tc.cidr)
			var got []string
			for _, op := range tc.ops {
				pod := network.Pod{ID: op[1:], NetNS: "/x"}
				if op[0] == '-' {
					if err := n.TearDown(t.Context(), pod); err != nil {
						t.Fatalf("TearDown(%s): %v", pod.ID, err)
					}
					continue
				}
				ip, err := n.SetUp(t.Context(), pod)
				switch {
				case errors.Is(err, fake.ErrExhausted):
					got = append(got, "err")
				case err != nil:
					t.Fatalf("SetUp(%s): unexpected error %v", pod.ID, err)
				default:
					got = append(got, ip)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInjectedErrors(t *testing.T) {
	boom := errors.New("boom")
	pod := network.Pod{ID: "s1", Namespace: "default", Name: "web", NetNS: "/x"}

	t.Run("FailNext fails once and allocates nothing", func(t *testing.T) {
		n := fake.New("10.1.0.0/24")
		n.FailNext(fake.OpSetUp, boom)
		if _, err := n.SetUp(t.Context(), pod); !errors.Is(err, boom) {
			t.Fatalf("first SetUp error = %v, want boom", err)
		}
		if _, ok := n.IP(pod.ID); ok {
			t.Fatal("failed SetUp left an address attached")
		}
		ip, err := n.SetUp(t.Context(), pod)
		if err != nil || ip != "10.1.0.2" {
			t.Fatalf("second SetUp = %q, %v; want 10.1.0.2, nil", ip, err)
		}
	})
	t.Run("FailAlways until cleared keeps the address", func(t *testing.T) {
		n := fake.New("10.1.0.0/24")
		if _, err := n.SetUp(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		n.FailAlways(fake.OpTearDown, boom)
		for range 2 {
			if err := n.TearDown(t.Context(), pod); !errors.Is(err, boom) {
				t.Fatalf("TearDown error = %v, want boom", err)
			}
		}
		if _, ok := n.IP(pod.ID); !ok {
			t.Fatal("failed TearDown released the address")
		}
		n.FailAlways(fake.OpTearDown, nil)
		if err := n.TearDown(t.Context(), pod); err != nil {
			t.Fatalf("TearDown after clearing: %v", err)
		}
		if _, ok := n.IP(pod.ID); ok {
			t.Fatal("TearDown kept the address")
		}
	})
	t.Run("canceled context", func(t *testing.T) {
		n := fake.New("10.1.0.0/24")
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := n.SetUp(ctx, pod); !errors.Is(err, context.Canceled) {
			t.Fatalf("SetUp error = %v, want context.Canceled", err)
		}
	})
}

func TestCallsRecorded(t *testing.T) {
	n := fake.New("10.1.0.0/24")
	pod := network.Pod{ID: "s1", Name: "web", NetNS: "/x", Ports: []network.PortMapping{{HostPort: 80, ContainerPort: 8080, Protocol: "tcp"}}}
	boom := errors.New("boom")
	if _, err := n.SetUp(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	n.FailNext(fake.OpTearDown, boom)
	_ = n.TearDown(t.Context(), pod)
	pod.Ports[0].HostPort = 81 // the record must not alias the caller's slice
	want := []fake.Call{
		{Op: fake.OpSetUp, Pod: network.Pod{ID: "s1", Name: "web", NetNS: "/x", Ports: []network.PortMapping{{HostPort: 80, ContainerPort: 8080, Protocol: "tcp"}}}, IP: "10.1.0.2"},
		{Op: fake.OpTearDown, Pod: network.Pod{ID: "s1", Name: "web", NetNS: "/x", Ports: []network.PortMapping{{HostPort: 80, ContainerPort: 8080, Protocol: "tcp"}}}, Err: boom},
	}
	if diff := cmp.Diff(want, n.Calls(), cmpopts.EquateErrors()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	n.ResetCalls()
	if got := n.Calls(); len(got) != 0 {
		t.Errorf("calls after ResetCalls = %v, want none", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	n := fake.New("10.1.0.0/16")
	const workers = 50
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			pod := network.Pod{ID: string(rune('A'+i%26)) + string(rune('a'+i/26)), NetNS: "/x"}
			for range 20 {
				if _, err := n.SetUp(context.Background(), pod); err != nil {
					t.Errorf("SetUp: %v", err)
				}
				if err := n.TearDown(context.Background(), pod); err != nil {
					t.Errorf("TearDown: %v", err)
				}
			}
			if _, err := n.SetUp(context.Background(), pod); err != nil {
				t.Errorf("SetUp: %v", err)
			}
		})
	}
	wg.Wait()
	att := n.Attached()
	if len(att) != workers {
		t.Fatalf("attached %d pods, want %d", len(att), workers)
	}
	seen := map[string]bool{}
	for _, ip := range att {
		if seen[ip] {
			t.Fatalf("address %s given twice", ip)
		}
		seen[ip] = true
	}
}

func TestNewPanicsOnBadCIDR(t *testing.T) {
	for _, cidr := range []string{"", "10.1.0.0", "fd00::/64"} {
		t.Run(cidr, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%q) did not panic", cidr)
				}
			}()
			fake.New(cidr)
		})
	}
}
