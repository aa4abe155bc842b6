package nodestatus

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestNodeConditions(t *testing.T) {
	then, now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2025, 1, 1, 0, 5, 0, 0, time.UTC)
	cfg := Config{Name: "n"}.withDefaults()
	healthy := facts{memAvail: 1 << 30, disk: DiskStats{Capacity: 100, Available: 50}}
	prev := nodeConditions(cfg, healthy, []corev1.NodeCondition{{Type: "NetworkUnavailable", Status: corev1.ConditionFalse}}, then)

	type cond struct {
		Status     corev1.ConditionStatus
		Reason     string
		Transition time.Time
	}
	tests := []struct {
		name string
		f    facts
		want map[corev1.NodeConditionType]cond
	}{
		{"nothing changed", healthy, map[corev1.NodeConditionType]cond{
			"NetworkUnavailable":      {corev1.ConditionFalse, "", time.Time{}},
			corev1.NodeMemoryPressure: {corev1.ConditionFalse, ReasonSufficientMemory, then},
			corev1.NodeDiskPressure:   {corev1.ConditionFalse, ReasonNoDiskPressure, then},
			corev1.NodePIDPressure:    {corev1.ConditionFalse, ReasonSufficientPID, then},
			corev1.NodeReady:          {corev1.ConditionTrue, ReasonReady, then},
		}},
		{"memory just under the threshold", facts{memAvail: 100<<20 - 1, disk: healthy.disk}, map[corev1.NodeConditionType]cond{
			"NetworkUnavailable":      {corev1.ConditionFalse, "", time.Time{}},
			corev1.NodeMemoryPressure: {corev1.ConditionTrue, ReasonInsufficientMemory, now},
			corev1.NodeDiskPressure:   {corev1.ConditionFalse, ReasonNoDiskPressure, then},
			corev1.NodePIDPressure:    {corev1.ConditionFalse, ReasonSufficientPID, then},
			corev1.NodeReady:          {corev1.ConditionTrue, ReasonReady, then},
		}},
		{"disk under 10% free, not ready", facts{memAvail: 1 << 30, disk: DiskStats{Capacity: 100, Available: 9}, notReady: errors.New("network not ready")},
			map[corev1.NodeConditionType]cond{
				"NetworkUnavailable":      {corev1.ConditionFalse, "", time.Time{}},
				corev1.NodeMemoryPressure: {corev1.ConditionFalse, ReasonSufficientMemory, then},
				corev1.NodeDiskPressure:   {corev1.ConditionTrue, ReasonDiskPressure, now},
				corev1.NodePIDPressure:    {corev1.ConditionFalse, ReasonSufficientPID, then},
				corev1.NodeReady:          {corev1.ConditionFalse, ReasonNotReady, now},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[corev1.NodeConditionType]cond{}
			for _, c := range nodeConditions(cfg, tt.f, prev, now) {
				got[c.Type] = cond{c.Status, c.Reason, c.LastTransitionTime.Time}
				if c.Type != "NetworkUnavailable" && !c.LastHeartbeatTime.Time.Equal(now) {
					t.Errorf("%s lastHeartbeatTime = %v, want %v", c.Type, c.LastHeartbeatTime, now)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatusChanged(t *testing.T) {
	cfg := Config{Name: "n", KubeletPort: 10250}.withDefaults()
	f := facts{cpu: 2, memTotal: 4 << 30, memAvail: 2 << 30, disk: DiskStats{Capacity: 10 << 30, Available: 5 << 30},
		addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}}}
	base := nodeStatus(cfg, f, corev1.NodeStatus{}, time.Unix(1000, 0))
	tests := []struct {
		name   string
		change func(f *facts, c *Config)
		want   bool
	}{
		{"only the heartbeat", func(*facts, *Config) {}, false},
		{"memory use moved but no pressure", func(f *facts, _ *Config) { f.memAvail = 3 << 30 }, false},
		{"address", func(f *facts, _ *Config) { f.addresses[0].Address = "10.0.0.3" }, true},
		{"runtime version", func(_ *facts, c *Config) { c.ContainerRuntimeVersion = "docker://25.0.0" }, true},
		{"cpu", func(f *facts, _ *Config) { f.cpu = 3 }, true},
		{"memory pressure", func(f *facts, _ *Config) { f.memAvail = 1 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f2, c2 := f, cfg
			f2.addresses = append([]corev1.NodeAddress(nil), f.addresses...)
			tt.change(&f2, &c2)
			next := nodeStatus(c2, f2, base, time.Unix(2000, 0))
			if got := statusChanged(base, next); got != tt.want {
				t.Errorf("statusChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeAddresses(t *testing.T) {
	ip := func(a string) []corev1.NodeAddress {
		return []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: a}}
	}
	tests := []struct {
		name               string
		override           string
		detected, previous []corev1.NodeAddress
		wantIP             string
	}{
		{"detected", "", ip("10.0.0.1"), nil, "10.0.0.1"},
		{"config overrides", "192.168.1.5", ip("10.0.0.1"), nil, "192.168.1.5"},
		{"nothing detected keeps the previous", "", nil, ip("10.0.0.9"), "10.0.0.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Name: "node-x", Addresses: Addresses{InternalIP: tt.override}}
			want := append(ip(tt.wantIP), corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-x"})
			if diff := cmp.Diff(want, nodeAddresses(cfg, tt.detected, tt.previous)); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for failures, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		got := backoff(failures, time.Second, 5*time.Second)
		if got > want || got < want*8/10 {
			t.Errorf("backoff(%d) = %v, want within 20%% below %v", failures, got, want)
		}
	}
}
