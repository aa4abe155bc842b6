package nodestatus_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/nodestatus"
)

func TestLoadExampleConfigs(t *testing.T) {
	tests := []struct {
		file string
		want nodestatus.Config
	}{
		{"node-1.yaml", nodestatus.Config{
			Name: "node-1", Roles: []string{"worker"}, Taints: []corev1.Taint{},
			Labels: map[string]string{"topology.kubernetes.io/zone": "zone-a", "minik8s.io/pool": "default"},
		}},
		{"node-2-tainted.yaml", nodestatus.Config{
			Name: "node-2", Roles: []string{"worker"},
			Labels:    map[string]string{"topology.kubernetes.io/zone": "zone-b"},
			Taints:    []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
			Addresses: nodestatus.Addresses{InternalIP: "10.99.0.12"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := nodestatus.LoadConfig(filepath.Join("..", "..", "..", "configs", "nodes", tt.file))
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpConfig); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// cmpConfig compares the file fields; the others hold funcs and interfaces.
var cmpConfig = cmp.Transformer("fileFields", func(c nodestatus.Config) map[string]any {
	return map[string]any{"name": c.Name, "labels": c.Labels, "roles": c.Roles, "taints": c.Taints, "addresses": c.Addresses}
})

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{"unknown field", "name: n\nlabelz: {a: b}\n", "labelz"},
		{"not yaml", "name: [\n", "node config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "node.yaml")
			if err := os.WriteFile(p, []byte(tt.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := nodestatus.LoadConfig(p)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("LoadConfig = %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
	if _, err := nodestatus.LoadConfig(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("LoadConfig of a missing file succeeded")
	}
}

func TestLoadConfigDefaultsNameToHostname(t *testing.T) {
	p := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(p, []byte("labels: {a: b}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := nodestatus.LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if cfg.Name != strings.ToLower(host) {
		t.Errorf("name = %q, want the host name %q", cfg.Name, strings.ToLower(host))
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     nodestatus.Config
		wantErr string // empty: valid
	}{
		{"minimal", nodestatus.Config{Name: "n1"}, ""},
		{"no name", nodestatus.Config{}, "name: required"},
		{"bad name", nodestatus.Config{Name: "Node_1"}, `name "Node_1"`},
		{"bad label key", nodestatus.Config{Name: "n", Labels: map[string]string{"a b": "c"}}, `labels: key "a b"`},
		{"bad label value", nodestatus.Config{Name: "n", Labels: map[string]string{"a": "-x-"}}, `labels[a]`},
		{"bad role", nodestatus.Config{Name: "n", Roles: []string{"no/slash"}}, `roles[0]`},
		{"bad taint effect", nodestatus.Config{Name: "n", Taints: []corev1.Taint{{Key: "k", Effect: "Sometimes"}}}, `taints[0].effect`},
		{"taint without key", nodestatus.Config{Name: "n", Taints: []corev1.Taint{{Effect: corev1.TaintEffectNoSchedule}}}, `taints[0].key`},
		{"ipv6 internal IP", nodestatus.Config{Name: "n", Addresses: nodestatus.Addresses{InternalIP: "fd00::1"}}, "addresses.internalIP"},
		{"bad port", nodestatus.Config{Name: "n", KubeletPort: 70000}, "kubelet port"},
		{"disk threshold over 1", nodestatus.Config{Name: "n", DiskPressureThreshold: 1.5}, "disk pressure threshold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Validate = %v, want an error mentioning %q", err, tt.wantErr)
			}
		})
	}
}
