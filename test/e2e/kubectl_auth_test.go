package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestKubectlAuth runs auth can-i, auth whoami, create role, create rolebinding and create
// token with both kubectls against the apiserver, which enforces RBAC: the admin may do
// anything, a ServiceAccount only what a binding grants it, and both kubectls print the same.
func TestKubectlAuth(t *testing.T) {
	srv := sharedServer(t)
	printed := map[string][]string{} // per kubectl, what it printed, with its namespace masked
	for _, k := range kubectls(t, srv) {
		t.Run(k.name, func(t *testing.T) {
			ns := "e2e-auth-" + k.name
			createNamespace(t, k, ns)
			sa := "system:serviceaccount:" + ns + ":reader"
			keep := func(s string) string {
				printed[k.name] = append(printed[k.name], strings.ReplaceAll(s, ns, "NS"))
				return s
			}
			// canI runs auth can-i and returns its answer; the exit status must agree with it.
			canI := func(args ...string) string {
				t.Helper()
				r := k.run(t, append([]string{"auth", "can-i"}, args...)...)
				if (r.stdout == "yes\n") != (r.err == nil) {
					t.Fatalf("auth can-i %v: the answer and the exit status disagree:\n%s", args, r)
				}
				return r.stdout
			}

			if got := keep(canI("create", "pods", "-n", ns)); got != "yes\n" {
				t.Errorf("admin can-i create pods = %q, want yes", got)
			}
			if got := keep(canI("list", "secrets", "-n", ns, "--as", sa)); got != "no\n" {
				t.Errorf("service account can-i list secrets before any binding = %q, want no", got)
			}

			out := k.ok(t, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods,deploy", "-n", ns).stdout
			if keep(out) != "role.rbac.authorization.k8s.io/pod-reader created\n" {
				t.Errorf("create role printed %q", out)
			}
			out = k.ok(t, "create", "rolebinding", "reader", "--role=pod-reader", "--serviceaccount", ns+":reader", "-n", ns).stdout
			if keep(out) != "rolebinding.rbac.authorization.k8s.io/reader created\n" {
				t.Errorf("create rolebinding printed %q", out)
			}
			// The authorizer reads bindings from its informers, a moment behind the write.
			eventually(t, 30*time.Second, "the binding to take effect", func() bool { return canI("list", "pods", "-n", ns, "--as", sa) == "yes\n" })
			if got := keep(canI("list", "deployments.apps", "-n", ns, "--as", sa)); got != "yes\n" {
				t.Errorf("service account can-i list deployments.apps = %q, want yes", got)
			}
			if got := keep(canI("list", "secrets", "-n", ns, "--as", sa)); got != "no\n" {
				t.Errorf("service account can-i list secrets = %q, want no", got)
			}

			list := keep(k.ok(t, "auth", "can-i", "--list", "-n", ns, "--as", sa).stdout)
			for _, row := range []string{"pods [] [] [get list]", "deployments.apps [] [] [get list]"} {
				if !containsRow(list, row) {
					t.Errorf("auth can-i --list lacks the row %q:\n%s", row, list)
				}
			}
			whoami := keep(k.ok(t, "auth", "whoami", "--as", sa).stdout)
			want := "ATTRIBUTE   VALUE\nUsername    " + sa + "\nGroups      [system:serviceaccounts system:serviceaccounts:" + ns + " system:authenticated]\n"
			if whoami != want {
				t.Errorf("auth whoami --as %s:\n%s\nwant:\n%s", sa, whoami, want)
			}

			// A token of the ServiceAccount authenticates as it and is held to its binding.
			path := filepath.Join(t.TempDir(), "sa.yaml")
			writeFile(t, path, "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: reader\n  namespace: "+ns+"\n")
			k.ok(t, "apply", "-f", path)
			token := k.ok(t, "create", "token", "reader", "-n", ns, "--duration", "10m").stdout
			if token == "" || strings.ContainsAny(token, " \n") {
				t.Fatalf("create token printed %q, want the token alone", token)
			}
			if out := k.ok(t, "auth", "whoami", "--token", token).stdout; !containsRow(out, "Username "+sa) {
				t.Errorf("auth whoami with the token:\n%s", out)
			}
			k.ok(t, "get", "pods", "-n", ns, "--token", token)
			r := k.run(t, "get", "secrets", "-n", ns, "--token", token)
			wantErr := `Error from server (Forbidden): secrets is forbidden: User "` + sa + `" cannot list resource "secrets" in API group "" in the namespace "` + ns + `"` + "\n"
			if r.err == nil || keep(r.stderr) != wantErr {
				t.Errorf("get secrets with the token:\n%s\nwant stderr %q", r, wantErr)
			}
		})
	}
	if d := cmp.Diff(printed["real"], printed["ours"]); d != "" {
		t.Errorf("our kubectl printed differently from the real one (-real +ours):\n%s", d)
	}
}

// containsRow reports whether a table has a line whose cells, spaces collapsed, read row.
func containsRow(table, row string) bool {
	for _, l := range strings.Split(table, "\n") {
		if strings.Join(strings.Fields(l), " ") == row {
			return true
		}
	}
	return false
}
