package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// controlPlaneRestartEnv opts in to the test that stops and starts every component of make
// up's cluster. That cuts every other test using the cluster, so `make test` runs it alone,
// after the rest.
const controlPlaneRestartEnv = "MINIK8S_E2E_CLUSTER_RESTART"

// restartMakeUp stops every component make up started (scripts/down.sh) and starts them again
// (scripts/up.sh start), as a user's make down; make up does with nothing to build.
func restartMakeUp(t *testing.T) {
	t.Helper()
	for _, cmd := range [][]string{{"down.sh"}, {"up.sh", "start"}} {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		start := time.Now()
		out, err := exec.CommandContext(ctx, filepath.Join("..", "..", "scripts", cmd[0]), cmd[1:]...).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("scripts/%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
		t.Logf("scripts/%s took %s", strings.Join(cmd, " "), time.Since(start).Round(time.Millisecond))
	}
}

// TestOperatorAcrossAClusterRestart installs the example operator, changes EchoApps and, before
// the operator has acted on the changes, stops and starts the whole make up cluster: apiserver,
// kubelet, kubeproxy, scheduler, controller-manager and serverless. Afterwards nothing is lost
// or made twice: the EchoApps, their defaults and their children keep their uids, the changes
// made before the restart are carried out, the CRD is served at the first request, the
// operator leads again and mends drift, its webhooks refuse again, and deleting the CRD and
// uninstalling the chart still clean up everything.
func TestOperatorAcrossAClusterRestart(t *testing.T) {
	if os.Getenv(controlPlaneRestartEnv) == "" {
		t.Skipf("stops and starts make up's cluster; set %s=1 to run it (make test does, alone)", controlPlaneRestartEnv)
	}
	o := newOperatorRun(t)
	k, ns := o.k, o.ns
	o.step("install", o.install)

	uids := map[string]string{} // kind/name -> uid before the restart
	uid := func(t *testing.T, obj string) string { return o.jsonpath(t, obj, "{.metadata.uid}") }
	o.step("before the restart", func(t *testing.T) {
		if r := o.apply(t, "web", "  message: before the restart\n"); r.err != nil {
			t.Fatalf("kubectl apply:\n%s", r)
		}
		o.waitPath(t, "echoapp/web", "{.status.readyReplicas} "+availablePath, "1 True")
		for _, obj := range []string{"echoapp/web", "deployment/web", "service/web"} {
			uids[obj] = uid(t, obj)
		}
		// Two changes the operator gets no time to act on: the cluster stops right after.
		k.ok(t, "-n", ns, "scale", "echoapp/web", "--replicas=3")
		if r := o.apply(t, "late", "  message: just before the restart\n"); r.err != nil {
			t.Fatalf("kubectl apply:\n%s", r)
		}
		uids["echoapp/late"] = uid(t, "echoapp/late")
	})

	o.step("restart", restartMakeUp)

	o.step("nothing lost", func(t *testing.T) {
		// The first requests after the restart find the resource and every object as it was.
		if got := o.jsonpath(t, "echoapp/web", "{.spec.replicas}/{.spec.tier}/{.spec.message}"); got != "3/free/before the restart" {
			t.Errorf("echoapp/web spec after the restart: %q, want 3/free/before the restart", got)
		}
		for obj, want := range uids {
			if got := uid(t, obj); got != want {
				t.Errorf("%s: uid %s after the restart, want %s (made again or lost)", obj, got, want)
			}
		}
		o.waitReady(t)
		// What was asked before the restart is carried out after it.
		o.waitPath(t, "deployment/web", "{.spec.replicas}", "3")
		o.waitPath(t, "echoapp/web", "{.status.readyReplicas} "+availablePath, "3 True")
		for _, kind := range []string{"deployment", "service"} {
			o.waitPath(t, kind+"/late", "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}", "EchoApp/late")
		}
		o.waitPath(t, "echoapp/late", "{.status.readyReplicas} "+availablePath, "1 True")
		for _, obj := range []string{"deployment/web", "service/web"} {
			if got := uid(t, obj); got != uids[obj] {
				t.Errorf("%s: uid %s, want %s: the operator made it again", obj, got, uids[obj])
			}
		}
		if out := k.ok(t, "-n", ns, "get", "echoapps", "-o", "name").stdout; strings.Join(strings.Fields(out), " ") != "echoapp.demo.minik8s.io/late echoapp.demo.minik8s.io/web" {
			t.Errorf("EchoApps after the restart:\n%s", out)
		}
	})

	o.step("the operator works again", func(t *testing.T) {
		k.ok(t, "-n", ns, "delete", "service/web")
		o.waitPath(t, "service/web", "{.spec.ports[0].port}/{.metadata.ownerReferences[0].name}", "80/web")
		// The webhooks answer once the operator's pod is an endpoint again.
		eventually(t, operatorWaitLong, "the validating webhook to refuse a forbidden message", func() bool {
			r := k.run(t, "-n", ns, "patch", "echoapp/web", "--type=merge", "-p", `{"spec":{"message":"now forbidden"}}`)
			return r.err != nil && strings.Contains(r.stderr, `must not contain the word "forbidden"`)
		})
		if r := o.apply(t, "after", "  message: after the restart\n"); r.err != nil {
			t.Fatalf("kubectl apply:\n%s", r)
		}
		if got := o.jsonpath(t, "echoapp/after", "{.spec.replicas}/{.spec.tier}"); got != "1/free" {
			t.Errorf("replicas/tier %q after the restart, want 1/free (schema default and mutating webhook)", got)
		}
		o.waitPath(t, "echoapp/after", "{.status.readyReplicas} "+availablePath, "1 True")
	})

	o.step("delete the CRD", o.deleteCRD)
	o.step("uninstall", o.uninstall)
}
