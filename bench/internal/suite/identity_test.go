package suite

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{"admin, default mode", Config{Identity: IdentityAdmin}, false},
		{"rbac under Node,RBAC", Config{Identity: IdentityRBAC, AuthorizationMode: ModeNodeRBAC, OtherBindings: 1000}, false},
		{"admin under AlwaysAllow", Config{Identity: IdentityAdmin, AuthorizationMode: ModeAlwaysAllow}, false},
		{"unknown identity", Config{Identity: "root"}, true},
		{"empty identity (fill sets admin)", Config{}, true},
		{"mode spelt otherwise", Config{Identity: IdentityAdmin, AuthorizationMode: "RBAC,Node"}, true},
		{"negative bindings", Config{Identity: IdentityRBAC, OtherBindings: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.validate()
			if (err != nil) != tt.wantErr {
				t.Errorf("validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestApiserverArgs(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"defaults add nothing", Config{Workdir: "/w", Identity: IdentityAdmin}, nil},
		{"mode", Config{Workdir: "/w", AuthorizationMode: ModeAlwaysAllow}, []string{"--authorization-mode", "AlwaysAllow"}},
		{"audit into the workdir", Config{Workdir: "/w", AuthorizationMode: ModeNodeRBAC, Audit: true},
			[]string{"--authorization-mode", "Node,RBAC", "--audit-policy-file", "/p.yaml", "--audit-log-path", "/w/audit.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, apiserverArgs(tt.cfg, "/p.yaml")); diff != "" {
				t.Errorf("apiserverArgs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOtherBindings(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			crbs, rbs := otherBindings(n)
			if got, want := [2]int{len(crbs), len(rbs)}, [2]int{n - n/2, n / 2}; got != want {
				t.Fatalf("(clusterrolebindings, rolebindings) = %v, want %v", got, want)
			}
			_, _, writer := writerPolicy()
			names := map[string]bool{}
			subjects := func(name string, ss []rbacv1.Subject) {
				if names[name] {
					t.Errorf("binding %s made twice", name)
				}
				names[name] = true
				for _, s := range ss {
					if s == writer.Subjects[0] {
						t.Errorf("binding %s names the writer %v", name, s)
					}
				}
			}
			for _, b := range crbs {
				subjects(b.Name, b.Subjects)
			}
			for _, b := range rbs {
				if b.Namespace != Namespace {
					t.Errorf("rolebinding %s in namespace %q, want %q", b.Name, b.Namespace, Namespace)
				}
				subjects(b.Name, b.Subjects)
			}
			if names[writer.Name] {
				t.Errorf("another binding is named %s, the writer's", writer.Name)
			}
		})
	}
}

func TestDescribeAccess(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"defaults", Config{Identity: IdentityAdmin},
			"--authorization-mode default (Node,RBAC), identity admin (system:masters), audit log off"},
		{"rbac with audit", Config{Identity: IdentityRBAC, AuthorizationMode: ModeNodeRBAC, OtherBindings: 1000, Audit: true},
			"--authorization-mode Node,RBAC, identity ServiceAccount bench/bench-writer through a RoleBinding, TokenRequest token; 1000 other bindings, audit log configs/audit-policy.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, describeAccess(tt.cfg)); diff != "" {
				t.Errorf("describeAccess mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
