package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helmVersion is the Helm the test builds from the Go module proxy; MINIK8S_HELM_VERSION
// picks another (e.g. "latest").
const helmVersion = "v3.22.0"

// helmBinary builds Helm from the module proxy once per version into the user's cache
// directory (outside the workspace, with Helm's own dependency versions) and returns its path.
func helmBinary(t *testing.T) string {
	t.Helper()
	version := helmVersion
	if v := os.Getenv("MINIK8S_HELM_VERSION"); v != "" {
		version = v
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "minik8s", "helm-"+version)
	bin := filepath.Join(dir, "helm")
	if _, err := os.Stat(bin); err == nil && version != "latest" {
		return bin
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	t.Logf("building helm %s from the Go module proxy into %s", version, dir)
	cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install helm %s: %v\n%s", version, err, out)
	}
	return bin
}

// helmRunner returns a function that runs Helm against the cluster of kubeconfig, in a home
// of its own (so no repository or cache of the user's leaks in) that is also its working
// directory, and fails the test when Helm fails.
func helmRunner(t *testing.T, kubeconfig string) func(args ...string) string {
	t.Helper()
	helm := helmBinary(t)
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"), "KUBECONFIG="+kubeconfig)
	return func(args ...string) string {
		t.Helper()
		// Not cancelled with the test, so a cleanup can uninstall a release.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 2*commandTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env, cmd.Dir = env, home
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}

// The chart `helm create` makes, unmodified but for the image and port, installs (with
// Helm's OpenAPI validation), upgrades, rolls back and uninstalls, leaving nothing behind.
func TestHelmChartLifecycle(t *testing.T) {
	srv := sharedServer(t)
	run := helmRunner(t, srv.kubeconfig())
	run("create", "demo")
	ns := "helm-demo"
	k := kubectls(t, srv)[0]
	k.ok(t, "create", "namespace", ns)
	values := []string{"--set", "image.repository=minik8s/echo", "--set", "image.tag=1.0", "--set", "service.port=8080"}

	run(append([]string{"install", "demo", "./demo", "--namespace", ns}, values...)...)
	for _, obj := range []string{"deployment/demo", "service/demo", "serviceaccount/demo"} {
		k.ok(t, "get", obj, "-n", ns)
	}
	replicas := func() string {
		return strings.TrimSpace(k.ok(t, "get", "deployment/demo", "-n", ns, "-o", "jsonpath={.spec.replicas}").stdout)
	}
	if r := replicas(); r != "1" {
		t.Fatalf("installed with %s replicas", r)
	}
	if port := k.ok(t, "get", "service/demo", "-n", ns, "-o", "jsonpath={.spec.ports[0].port}").stdout; strings.TrimSpace(port) != "8080" {
		t.Fatalf("service port %q", port)
	}

	run(append([]string{"upgrade", "demo", "./demo", "--namespace", ns, "--set", "replicaCount=3"}, values...)...)
	if r := replicas(); r != "3" {
		t.Fatalf("upgraded to %s replicas, want 3", r)
	}
	run("rollback", "demo", "1", "--namespace", ns)
	if r := replicas(); r != "1" {
		t.Fatalf("rolled back to %s replicas, want 1", r)
	}
	var history []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(run("history", "demo", "--namespace", ns, "-o", "json")), &history); err != nil {
		t.Fatal(err)
	}
	if len(history) != 3 || history[2].Status != "deployed" || !strings.Contains(history[2].Description, "Rollback to 1") {
		t.Fatalf("history %+v", history)
	}

	run("uninstall", "demo", "--namespace", ns)
	left := k.ok(t, "get", "all,serviceaccounts,secrets,configmaps", "-n", ns, "-o", "name").stdout
	for _, line := range strings.Fields(left) {
		if line != "serviceaccount/default" {
			t.Errorf("left behind after uninstall: %s", line)
		}
	}
}
