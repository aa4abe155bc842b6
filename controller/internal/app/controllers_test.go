package app

import "testing"

func TestControllersFlag(t *testing.T) {
	tests := []struct {
		list []string
		want map[string]bool
	}{
		{nil, map[string]bool{"endpoint": true, "ingress": true, "nodelifecycle": true}},
		{[]string{"*"}, map[string]bool{"endpoint": true, "nodelifecycle": true}},
		{[]string{"*", "-endpoint"}, map[string]bool{"endpoint": false, "nodelifecycle": true}},
		{[]string{"endpoint"}, map[string]bool{"endpoint": true, "nodelifecycle": false}},
	}
	for _, tt := range tests {
		for name, want := range tt.want {
			if got := enabled(tt.list, name); got != want {
				t.Errorf("--controllers=%v: %s enabled = %v, want %v", tt.list, name, got, want)
			}
		}
	}
	if err := validateControllers([]string{"*", "-endpointslice", "nodelifecycle"}); err != nil {
		t.Errorf("valid list refused: %v", err)
	}
	if err := validateControllers([]string{"no-such-controller"}); err == nil {
		t.Error("unknown controller accepted")
	}
}
