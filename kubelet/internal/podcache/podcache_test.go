package podcache_test

import (
	"testing"

	"minik8s.io/kubelet/internal/podcache"
)

func TestNewer(t *testing.T) {
	tests := []struct {
		next, prev string
		want       bool
	}{
		{"2", "1", true},
		{"1", "2", false},
		{"1", "1", false},
		{"10", "9", true},
		{"9", "10", false},
		{"010", "10", false},
		{"0", "", true},
		{"", "0", true},
		{"", "", false},
		{"abc", "abc", false},
		{"abc", "5", true},
		{"99999999999999999999999", "99999999999999999999998", true},
	}
	for _, tt := range tests {
		t.Run(tt.next+"_over_"+tt.prev, func(t *testing.T) {
			if got := podcache.Newer(tt.next, tt.prev); got != tt.want {
				t.Errorf("Newer(%q, %q) = %v, want %v", tt.next, tt.prev, got, tt.want)
			}
		})
	}
}
