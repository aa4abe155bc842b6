package gateway

import "testing"

func TestQueueBound(t *testing.T) {
	tests := []struct {
		name                                string
		limit, maxQueue, maxReplicas, ready int
		want                                int
	}{
		{"no per-pod limit: the queue alone", 0, 10, 5, 1, 10},
		{"at max scale: the queue alone", 2, 10, 3, 3, 10},
		{"below max: the coming pods' share too", 2, 10, 3, 1, 14},
		{"max unknown", 2, 10, 0, 1, 10},
		{"no queue, one pod to come", 1, 0, 2, 1, 1},
	}
	for _, tt := range tests {
		if got := queueBound(tt.limit, tt.maxQueue, tt.maxReplicas, tt.ready); got != tt.want {
			t.Errorf("%s: queueBound(%d, %d, %d, %d) = %d, want %d", tt.name, tt.limit, tt.maxQueue, tt.maxReplicas, tt.ready, got, tt.want)
		}
	}
}
