package abuse

import "testing"

func TestMaxRestarts(t *testing.T) {
	for _, tc := range []struct{ seconds, want int }{
		{0, 1}, {9, 1}, {10, 2}, {29, 2}, {30, 3}, {70, 4}, {150, 5}, {310, 6}, {610, 7}, {910, 8},
	} {
		if got := MaxRestarts(tc.seconds); got != tc.want {
			t.Errorf("MaxRestarts(%d) = %d, want %d (attempts at %v)", tc.seconds, got, tc.want, BackOffSchedule(8))
		}
	}
}
