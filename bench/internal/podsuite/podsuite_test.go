package podsuite

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodRunning(t *testing.T) {
	yes, no := true, false
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := func(phase corev1.PodPhase, sts ...corev1.ContainerStatus) *corev1.Pod {
		return &corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "echo"}}},
			Status: corev1.PodStatus{Phase: phase, ContainerStatuses: sts},
		}
	}
	deleting := pod(corev1.PodRunning, corev1.ContainerStatus{Ready: true, State: running})
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"pending", pod(corev1.PodPending), false},
		{"running and ready", pod(corev1.PodRunning, corev1.ContainerStatus{Ready: true, Started: &yes, State: running}), true},
		{"running, not ready", pod(corev1.PodRunning, corev1.ContainerStatus{Ready: false, State: running}), false},
		{"ready but not started", pod(corev1.PodRunning, corev1.ContainerStatus{Ready: true, Started: &no, State: running}), false},
		{"no container status", pod(corev1.PodRunning), false},
		{"being deleted", deleting, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podRunning(tt.pod); got != tt.want {
				t.Errorf("podRunning = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ts := []timeline{
		{Start: at(0), Sandbox: at(100), App: at(300), Running: at(1300)},
		{Start: at(0), Sandbox: at(200), App: at(500), Running: at(700)},
		{Start: at(0), Running: at(900)}, // Docker's events missed: only the total counts
	}
	p := summarize(ts)
	got := []time.Duration{p.Total.P50, p.Total.Max, p.ToSandbox.Max, p.ToApp.P50, p.ToRunning.Max}
	want := []time.Duration{900 * time.Millisecond, 1300 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
	if p.Total.N != 3 || p.ToSandbox.N != 2 {
		t.Errorf("n = %d total, %d sandbox; want 3 and 2", p.Total.N, p.ToSandbox.N)
	}
}

func TestSchedule(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		interval time.Duration
	}{
		{"burst", 20, 0},
		{"paced", 5, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]time.Time{}
			start := time.Now()
			schedule(context.Background(), tt.n, tt.interval, func(i int) {
				mu.Lock()
				seen[i] = time.Now()
				mu.Unlock()
			})
			if len(seen) != tt.n {
				t.Fatalf("called %d times, want %d", len(seen), tt.n)
			}
			// Never early: the i-th call waits for its slot.
			for i, at := range seen {
				if at.Before(start.Add(time.Duration(i) * tt.interval)) {
					t.Errorf("call %d at %s, before its slot %s", i, at.Sub(start), time.Duration(i)*tt.interval)
				}
			}
		})
	}
}

func TestCNIConfig(t *testing.T) {
	pod, lo, err := cniConfig("net", "br0", "10.244.201.0/24", "/data")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPAM   struct {
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(pod, &got); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, p := range got.Plugins {
		types = append(types, p.Type)
	}
	if diff := cmp.Diff([]string{"bridge", "firewall", "portmap"}, types); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	if got.Plugins[0].Bridge != "br0" || got.Plugins[0].IPAM.Ranges[0][0]["gateway"] != "10.244.201.1" {
		t.Errorf("bridge plugin = %+v, want bridge br0 with gateway 10.244.201.1", got.Plugins[0])
	}
	if !json.Valid(lo) {
		t.Errorf("loopback config is not JSON: %s", lo)
	}
	if _, _, err := cniConfig("net", "br0", "10.244.0.0/16", "/data"); err == nil {
		t.Error("a /16 was accepted; want an error")
	}
}
