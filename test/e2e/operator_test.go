package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"minik8s.io/shared/testwait"
)

// The example operator of test/operator, as its chart installs it.
const (
	operatorRelease  = "echo-operator"
	operatorImage    = "minik8s/echo-operator:1.0"
	echoAppCRD       = "echoapps.demo.minik8s.io"
	validatingHook   = "vechoapp.demo.minik8s.io"
	operatorWaitLong = 3 * time.Minute
)

var echoAppsGVR = schema.GroupVersionResource{Group: "demo.minik8s.io", Version: "v1", Resource: "echoapps"}

// echoAppManifest is an EchoApp as a user writes it; spec is the indented body of spec.
const echoAppManifest = `apiVersion: demo.minik8s.io/v1
kind: EchoApp
metadata:
  name: %s
  namespace: %s
spec:
%s`

// requireOperatorImages makes sure make up's Docker has the operator's image and the one its
// EchoApps run, building them when missing (there is no registry to pull them from).
func requireOperatorImages(t *testing.T) {
	t.Helper()
	requireDocker(t)
	for _, img := range []string{operatorImage, "minik8s/echo:1.0"} {
		if exec.Command("docker", "image", "inspect", img).Run() == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join("..", "..", "scripts", "images.sh"), "--if-missing", "echo", "echo-operator")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/images.sh --if-missing echo echo-operator: %v\n%s", err, out)
		}
		return
	}
}

// TestOperatorOnMakeUp installs the example operator's chart on the make up cluster with Helm
// and drives EchoApps with the real kubectl, as a user of any Kubernetes would: the CRD's
// schema defaults and refuses, the operator's webhooks mutate and refuse, the operator makes
// and mends each EchoApp's Deployment and Service and reports status, the scale subresource
// and printer columns work, client-go's dynamic client and informer see EchoApps, deleting the
// CRD takes every EchoApp and (through garbage collection) their Deployments, and uninstalling
// the chart leaves nothing behind.
func TestOperatorOnMakeUp(t *testing.T) {
	o := newOperatorRun(t)
	k, ns, echoApps, dyn := o.k, o.ns, o.echoApps, o.dyn
	step := o.step

	step("install", o.install)

	step("discovery", func(t *testing.T) {
		out := k.ok(t, "api-resources", "--api-group=demo.minik8s.io").stdout
		var row []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "echoapps" {
				row = f
			}
		}
		if want := []string{"echoapps", "ea", "demo.minik8s.io/v1", "true", "EchoApp"}; !slices.Equal(row, want) {
			t.Errorf("kubectl api-resources: echoapps row %q, want %q\n%s", row, want, out)
		}
	})

	step("create", func(t *testing.T) {
		if r := o.apply(t, "web", "  message: hello from minik8s\n"); r.err != nil || strings.TrimSpace(r.stdout) != "echoapp.demo.minik8s.io/web created" {
			t.Fatalf("kubectl apply:\n%s", r)
		}
		// The schema's default and the mutating webhook's, in the stored object.
		if got := o.jsonpath(t, "echoapp/web", "{.spec.replicas}/{.spec.tier}"); got != "1/free" {
			t.Errorf("replicas/tier %q, want 1/free (schema default and mutating webhook)", got)
		}
		for _, kind := range []string{"deployment", "service"} {
			o.waitPath(t, kind+"/web", "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}/{.metadata.ownerReferences[0].controller}", "EchoApp/web/true")
		}
		if got := o.jsonpath(t, "deployment/web", `{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[?(@.name=="MESSAGE")].value}`); got != "minik8s/echo:1.0 hello from minik8s" {
			t.Errorf("deployment image and MESSAGE %q", got)
		}
		if got := o.jsonpath(t, "service/web", "{.spec.type} {.spec.ports[0].port} {.spec.ports[0].targetPort}"); got != "ClusterIP 80 8080" {
			t.Errorf("service type and ports %q, want ClusterIP 80 8080", got)
		}
		o.waitPath(t, "echoapp/web", availablePath, "True")
		if got := o.jsonpath(t, "echoapp/web", "{.status.replicas}/{.status.readyReplicas} {.status.selector}"); got != "1/1 app.kubernetes.io/name=web" {
			t.Errorf("status %q, want 1/1 app.kubernetes.io/name=web", got)
		}
		for _, resource := range []string{"echoapps", "ea"} {
			out := k.ok(t, "-n", ns, "get", resource).stdout
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME REPLICAS READY TIER AGE" ||
				!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "web 1 1 free ") {
				t.Errorf("kubectl get %s:\n%s", resource, out)
			}
		}
		// The category all takes EchoApps in.
		if out := k.ok(t, "-n", ns, "get", "all", "-o", "name").stdout; !strings.Contains(out, "echoapp.demo.minik8s.io/web\n") {
			t.Errorf("kubectl get all lacks the EchoApp:\n%s", out)
		}
	})

	step("scale", func(t *testing.T) {
		if out := k.ok(t, "-n", ns, "scale", "echoapp/web", "--replicas=2").stdout; strings.TrimSpace(out) != "echoapp.demo.minik8s.io/web scaled" {
			t.Errorf("kubectl scale printed %q", out)
		}
		if got := o.jsonpath(t, "echoapp/web", "{.spec.replicas}"); got != "2" {
			t.Errorf("spec.replicas %s after kubectl scale, want 2", got)
		}
		o.waitPath(t, "deployment/web", "{.spec.replicas}", "2")
		o.waitPath(t, "echoapp/web", "{.status.readyReplicas} "+availablePath, "2 True")
		var scale struct {
			Spec   struct{ Replicas int } `json:"spec"`
			Status struct {
				Replicas int
				Selector string
			} `json:"status"`
		}
		raw := k.ok(t, "get", "--raw", "/apis/demo.minik8s.io/v1/namespaces/"+ns+"/echoapps/web/scale").stdout
		if err := json.Unmarshal([]byte(raw), &scale); err != nil {
			t.Fatalf("scale subresource: %v\n%s", err, raw)
		}
		if scale.Spec.Replicas != 2 || scale.Status.Replicas != 2 || scale.Status.Selector != "app.kubernetes.io/name=web" {
			t.Errorf("scale subresource %+v", scale)
		}
	})

	step("drift", func(t *testing.T) {
		k.ok(t, "-n", ns, "scale", "deployment/web", "--replicas=5")
		o.waitPath(t, "deployment/web", "{.spec.replicas}", "2")
		k.ok(t, "-n", ns, "delete", "service/web")
		o.waitPath(t, "service/web", "{.spec.ports[0].port}/{.metadata.ownerReferences[0].name}", "80/web")
		k.ok(t, "-n", ns, "set", "env", "deployment/web", "MESSAGE=changed by hand")
		o.waitPath(t, "deployment/web", `{.spec.template.spec.containers[0].env[?(@.name=="MESSAGE")].value}`, "hello from minik8s")
	})

	step("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name, spec string
			want       []string // all in kubectl's error
		}{
			{"replicas not a number", "  message: hi\n  replicas: two\n", []string{`EchoApp "bad" is invalid`, "spec.replicas", "integer"}},
			{"too many replicas", "  message: hi\n  replicas: 99\n", []string{`EchoApp "bad" is invalid`, "spec.replicas", "less than or equal to 20"}},
			{"no message", "  replicas: 1\n", []string{`EchoApp "bad" is invalid`, "spec.message", "Required value"}},
			{"message too long", "  message: " + strings.Repeat("x", 101) + "\n", []string{`EchoApp "bad" is invalid`, "spec.message", "100"}},
			{"unknown tier", "  message: hi\n  tier: gold\n", []string{`EchoApp "bad" is invalid`, "spec.tier", `Unsupported value: "gold"`}},
			// The webhook answers 422 Invalid with causes: kubectl prints those, as it does
			// for any Invalid Status (the webhook's name is in the Status message, below).
			{"forbidden word", "  message: this is forbidden\n", []string{
				`EchoApp "bad" is invalid`, `spec.message: Invalid value: "this is forbidden": must not contain the word "forbidden"`,
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := o.apply(t, "bad", tc.spec)
				if r.err == nil {
					t.Fatalf("accepted:\n%s", r)
				}
				for _, w := range tc.want {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("kubectl's error lacks %q:\n%s", w, r.stderr)
					}
				}
				if out := k.run(t, "-n", ns, "get", "echoapp/bad"); out.err == nil {
					t.Errorf("the refused EchoApp was stored:\n%s", out.stdout)
				}
			})
		}
		// The webhook sees updates too.
		r := k.run(t, "-n", ns, "patch", "echoapp/web", "--type=merge", "-p", `{"spec":{"message":"now forbidden"}}`)
		if r.err == nil || !strings.Contains(r.stderr, `must not contain the word "forbidden"`) {
			t.Errorf("patch to a forbidden message:\n%s", r)
		}
		// Through client-go the schema's refusal is a 422 Invalid naming the field.
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "demo.minik8s.io/v1", "kind": "EchoApp",
			"metadata": map[string]any{"name": "bad"}, "spec": map[string]any{"message": "hi", "replicas": int64(99)},
		}}
		_, err := echoApps.Create(t.Context(), bad, metav1.CreateOptions{})
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Code != 422 || !strings.Contains(err.Error(), "spec.replicas") {
			t.Errorf("create with replicas 99: %v, want 422 Invalid naming spec.replicas", err)
		}
		// The webhook's refusal names it in the Status message, as kube-apiserver words it.
		_ = unstructured.SetNestedField(bad.Object, int64(1), "spec", "replicas")
		_ = unstructured.SetNestedField(bad.Object, "forbidden here", "spec", "message")
		_, err = echoApps.Create(t.Context(), bad, metav1.CreateOptions{})
		if want := `admission webhook "` + validatingHook + `" denied the request: `; !apierrors.IsInvalid(err) || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "spec.message") {
			t.Errorf("create with a forbidden message: %v, want a 422 starting %q naming spec.message", err, want)
		}
	})

	step("dynamic client and informer", func(t *testing.T) {
		list, err := echoApps.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("dynamic list: %v", err)
		}
		if names := unstructuredNames(list.Items); !slices.Equal(names, []string{"web"}) {
			t.Errorf("dynamic list: %v, want [web]", names)
		}
		var mu sync.Mutex
		added := map[string]string{} // name -> tier
		watchAdded(t, dyn, echoAppsGVR, ns, func(u *unstructured.Unstructured) {
			tier, _, _ := unstructured.NestedString(u.Object, "spec", "tier")
			mu.Lock()
			added[u.GetName()] = tier
			mu.Unlock()
		})
		second := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "demo.minik8s.io/v1", "kind": "EchoApp",
			"metadata": map[string]any{"name": "second"}, "spec": map[string]any{"message": "hi", "replicas": int64(0)},
		}}
		created, err := echoApps.Create(t.Context(), second, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("dynamic create: %v", err)
		}
		if tier, _, _ := unstructured.NestedString(created.Object, "spec", "tier"); tier != "free" {
			t.Errorf("created through the dynamic client with tier %q, want free", tier)
		}
		testwait.For(t, "the informer to see web and the added EchoApp second", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return added["web"] == "free" && added["second"] == "free"
		})
		o.waitPath(t, "echoapp/second", availablePath, "True")
	})

	step("foreground and orphaning deletes", func(t *testing.T) {
		// Foreground: kubectl returns once the EchoApp is gone, which is after its children.
		k.ok(t, "-n", ns, "delete", "echoapp/second", "--cascade=foreground", "--timeout=2m")
		for _, obj := range []string{"deployment/second", "service/second"} {
			if r := k.run(t, "-n", ns, "get", obj); r.err == nil {
				t.Errorf("%s still there after its EchoApp's foreground deletion finished", obj)
			}
		}
		// Orphan: the children stay, without the reference to the EchoApp.
		if r := o.apply(t, "third", "  message: orphaned soon\n"); r.err != nil {
			t.Fatalf("kubectl apply:\n%s", r)
		}
		o.waitPath(t, "deployment/third", "{.metadata.ownerReferences[0].name}", "third")
		o.waitPath(t, "service/third", "{.metadata.ownerReferences[0].name}", "third")
		k.ok(t, "-n", ns, "delete", "echoapp/third", "--cascade=orphan", "--timeout=2m")
		for _, obj := range []string{"deployment/third", "service/third"} {
			if got := o.jsonpath(t, obj, "{.metadata.name}/{.metadata.ownerReferences}"); got != "third/" {
				t.Errorf("%s after its EchoApp was deleted orphaning it: %q, want it kept without owner references", obj, got)
			}
		}
		k.ok(t, "-n", ns, "delete", "deployment/third", "service/third")
	})

	step("delete the CRD", o.deleteCRD)
	step("uninstall", o.uninstall)
}

// operatorRun is one install of the example operator's chart on the make up cluster, in a
// namespace of its own, driven with the real kubectl as a user would.
type operatorRun struct {
	t        *testing.T
	c        *makeUpCluster
	k        kubectl
	ns, dir  string
	helm     func(args ...string) string
	dyn      *dynamic.DynamicClient
	echoApps dynamic.ResourceInterface

	installed, crdDeleted bool
}

func newOperatorRun(t *testing.T) *operatorRun {
	c := requireMakeUp(t)
	requireOperatorImages(t)
	o := &operatorRun{t: t, c: c, ns: c.namespace(t, "e2e-operator"), dir: t.TempDir(), helm: helmRunner(t, c.kubeconfig)}
	o.k = c.kubectls(t)[0] // the real kubectl, as users run it
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if o.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	o.echoApps = o.dyn.Resource(echoAppsGVR).Namespace(o.ns)

	// Cleanups run last first: the CRD (and with it every EchoApp), then the release, then
	// the namespace; each is a no-op once the test did it.
	t.Cleanup(func() {
		if o.installed {
			o.helm("uninstall", operatorRelease, "--namespace", o.ns)
		}
	})
	t.Cleanup(func() {
		if !o.crdDeleted {
			_, _ = execErr(context.Background(), realKubectl, "--kubeconfig", c.kubeconfig, "delete", "crd", echoAppCRD, "--ignore-not-found")
		}
	})
	return o
}

// step runs f as a subtest and stops the test where it fails: later steps build on it.
func (o *operatorRun) step(name string, f func(t *testing.T)) {
	if !o.t.Run(name, f) {
		o.t.FailNow()
	}
}

// apply applies an EchoApp whose spec is the indented body given.
func (o *operatorRun) apply(t *testing.T, name, spec string) result {
	t.Helper()
	file := filepath.Join(o.dir, name+".yaml")
	writeFile(t, file, fmt.Sprintf(echoAppManifest, name, o.ns, spec))
	return o.k.run(t, "apply", "-f", file)
}

func (o *operatorRun) jsonpath(t *testing.T, obj, path string) string {
	t.Helper()
	return strings.TrimSpace(o.k.ok(t, "-n", o.ns, "get", obj, "-o", "jsonpath="+path).stdout)
}

// waitPath waits until obj's jsonpath reads want.
func (o *operatorRun) waitPath(t *testing.T, obj, path, want string) {
	t.Helper()
	eventually(t, operatorWaitLong, fmt.Sprintf("%s %s to be %q", obj, path, want), func() bool {
		out := o.k.run(t, "-n", o.ns, "get", obj, "-o", "jsonpath="+path)
		return out.err == nil && strings.TrimSpace(out.stdout) == want
	})
}

const availablePath = `{.status.conditions[?(@.type=="Available")].status}`

// install installs the chart and waits until the operator leads and its webhooks answer.
func (o *operatorRun) install(t *testing.T) {
	out := o.helm("install", operatorRelease, chartPath(t, "echo-operator"), "--namespace", o.ns)
	o.installed = true
	if !strings.Contains(out, "STATUS: deployed") {
		t.Errorf("helm install printed:\n%s", out)
	}
	o.waitReady(t)
}

// waitReady waits until the operator's Deployment is available, its webhook Service has the
// ready pod as an endpoint (the webhooks answer only then) and a replica holds the Lease.
func (o *operatorRun) waitReady(t *testing.T) {
	t.Helper()
	o.waitPath(t, "deployment/"+operatorRelease, availablePath, "True")
	o.waitPath(t, "deployment/"+operatorRelease, "{.status.readyReplicas}", "1")
	o.waitPath(t, "endpoints/"+operatorRelease+"-webhook", "{.subsets[0].addresses[0].targetRef.kind}", "Pod")
	eventually(t, operatorWaitLong, "a leader to hold the operator's Lease", func() bool {
		out := o.k.run(t, "-n", o.ns, "get", "lease/echo-operator.demo.minik8s.io", "-o", "jsonpath={.spec.holderIdentity}")
		return out.err == nil && strings.HasPrefix(strings.TrimSpace(out.stdout), operatorRelease+"-")
	})
}

// deleteCRD deletes the CRD and checks that every EchoApp, their Deployments and the
// resource itself are gone.
func (o *operatorRun) deleteCRD(t *testing.T) {
	k, ns := o.k, o.ns
	k.ok(t, "delete", "crd", echoAppCRD)
	o.crdDeleted = true
	eventually(t, operatorWaitLong, "the EchoApps' Deployments to be collected", func() bool {
		out := k.run(t, "-n", ns, "get", "deployments", "-l", "app.kubernetes.io/managed-by=echo-operator", "-o", "name")
		return out.err == nil && strings.TrimSpace(out.stdout) == ""
	})
	if out := k.ok(t, "api-resources", "--api-group=demo.minik8s.io").stdout; strings.Contains(out, "echoapps") {
		t.Errorf("kubectl api-resources still lists echoapps:\n%s", out)
	}
	if r := k.run(t, "get", "--raw", "/apis/demo.minik8s.io/v1/namespaces/"+ns+"/echoapps"); r.err == nil {
		t.Errorf("echoapps still served:\n%s", r)
	}
	if _, err := o.echoApps.List(t.Context(), metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dynamic list after the CRD's deletion: %v, want NotFound", err)
	}
}

// uninstall uninstalls the chart and checks that it leaves nothing behind.
func (o *operatorRun) uninstall(t *testing.T) {
	k, ns := o.k, o.ns
	o.helm("uninstall", operatorRelease, "--namespace", ns)
	o.installed = false
	eventually(t, operatorWaitLong, "the operator's pods to go", func() bool {
		out := k.run(t, "-n", ns, "get", "pods", "-o", "name")
		return out.err == nil && strings.TrimSpace(out.stdout) == ""
	})
	left := k.ok(t, "-n", ns, "get", "all,serviceaccounts,secrets,roles,rolebindings", "-o", "name").stdout
	for _, line := range strings.Fields(left) {
		if line != "serviceaccount/default" {
			t.Errorf("left behind in %s after uninstall: %s", ns, line)
		}
	}
	cluster := k.ok(t, "get", "clusterroles,clusterrolebindings,validatingwebhookconfigurations,mutatingwebhookconfigurations",
		"-l", "app.kubernetes.io/instance="+operatorRelease, "-o", "name").stdout
	if strings.TrimSpace(cluster) != "" {
		t.Errorf("cluster-scoped objects left behind after uninstall:\n%s", cluster)
	}
}

func unstructuredNames(items []unstructured.Unstructured) []string {
	var names []string
	for _, u := range items {
		names = append(names, u.GetName())
	}
	slices.Sort(names)
	return names
}
