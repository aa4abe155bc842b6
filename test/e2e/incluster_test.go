package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"minik8s.io/shared/client"
)

const (
	inclusterImage = "minik8s/incluster:1.0"
	pythonImage    = "minik8s/python-runtime:1.0"
	// checkScript is the Python twin of the incluster image, passed to pods in a ConfigMap.
	checkScript = "testdata/incluster/check.py"
	// admissionTokenSeconds is the life of the token ServiceAccount admission asks for, as
	// Kubernetes' admission does: an hour and seven seconds.
	admissionTokenSeconds = 3607
)

// inclusterRound is one JSON line of the incluster image or of check.py.
type inclusterRound struct {
	Time         int64             `json:"time"`
	Pods         int               `json:"pods"`
	PodNames     []string          `json:"podNames"`
	PodsError    string            `json:"podsError"`
	SecretsCode  int               `json:"secretsCode"`
	SecretsError string            `json:"secretsError"`
	TokenIat     int64             `json:"tokenIat"`
	TokenExp     int64             `json:"tokenExp"`
	TokenSub     string            `json:"tokenSub"`
	TokenError   string            `json:"tokenError"`
	Env          map[string]string `json:"env"`
}

// requireInClusterImages makes sure the images of the in-cluster pods are in make up's Docker:
// the workload images (built when missing) and a python-runtime with the official client,
// which an image built before it carried python3-kubernetes lacks.
func requireInClusterImages(t *testing.T) {
	t.Helper()
	requireDocker(t)
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "none", pythonImage,
		"python3", "-c", "import kubernetes").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import the official Kubernetes client (rebuild it: scripts/images.sh python-runtime): %v\n%s", pythonImage, err, out)
	}
}

// kubectls are both kubectls with make up's admin kubeconfig.
func (c *makeUpCluster) kubectls(t *testing.T) []kubectl {
	return kubectls(t, &apiserver{home: filepath.Dir(c.kubeconfig)})
}

// rounds reads the JSON lines a pod has logged so far; other lines (a program's own log) are
// skipped.
func (c *makeUpCluster) rounds(ctx context.Context, ns, pod string) ([]inclusterRound, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	logs, err := c.cl.Logs(ctx, ns, pod, corev1.PodLogOptions{})
	if err != nil {
		return nil, err
	}
	defer logs.Close()
	var out []inclusterRound
	sc := bufio.NewScanner(logs)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.HasPrefix(string(line), "{") {
			continue
		}
		var r inclusterRound
		if json.Unmarshal(line, &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}

// waitRound waits until the pod logs a round cond accepts and returns it.
func (c *makeUpCluster) waitRound(t *testing.T, ns, pod, what string, timeout time.Duration, cond func(inclusterRound) bool) inclusterRound {
	t.Helper()
	var (
		seen    []inclusterRound
		lastErr error
	)
	deadline := time.Now().Add(timeout)
	for {
		seen, lastErr = c.rounds(t.Context(), ns, pod)
		if i := slices.IndexFunc(seen, cond); lastErr == nil && i >= 0 {
			return seen[i]
		}
		if time.Now().After(deadline) {
			break
		}
		sleep(t, time.Second)
	}
	p, err := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl).Get(t.Context(), ns, pod, metav1.GetOptions{})
	if len(seen) > 3 {
		seen = seen[len(seen)-3:]
	}
	t.Fatalf("pod %s logged no round %s within %s (last error %v); its last rounds:\n%s\npod: %s",
		pod, what, timeout, lastErr, dump(seen), describePod(p, err))
	return inclusterRound{}
}

// waitPodRunning waits until the pod runs with every container ready.
func (c *makeUpCluster) waitPodRunning(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pods := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl)
	return pollUntil(t, "pod "+ns+"/"+name, "running",
		func() (*corev1.Pod, error) { return pods.Get(t.Context(), ns, name, metav1.GetOptions{}) },
		podRunning, nil, func() string { return "" })
}

// create stores obj with the admin's credential, failing the test on error.
func create[T runtime.Object, L runtime.Object](t *testing.T, c *makeUpCluster, obj T) T {
	t.Helper()
	created, err := client.MustFor[T, L](c.cl).Create(t.Context(), obj, metav1.CreateOptions{})
	if err != nil {
		if m, ok := any(obj).(metav1.Object); ok {
			t.Fatalf("create %T %s/%s: %v", obj, m.GetNamespace(), m.GetName(), err)
		}
		t.Fatalf("create %T: %v", obj, err)
	}
	return created
}

// createLister makes the ServiceAccount lister and binds it to a Role that reads pods and
// nothing else.
func createLister(t *testing.T, c *makeUpCluster, ns string) {
	t.Helper()
	create[*corev1.ServiceAccount, *corev1.ServiceAccountList](t, c, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lister"}})
	create[*rbacv1.Role, *rbacv1.RoleList](t, c, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	})
	create[*rbacv1.RoleBinding, *rbacv1.RoleBindingList](t, c, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lister-reads-pods"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "lister"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
	})
}

// createCheckScript puts check.py in the ConfigMap incluster-check.
func createCheckScript(t *testing.T, c *makeUpCluster, ns string) {
	t.Helper()
	script, err := os.ReadFile(checkScript)
	if err != nil {
		t.Fatal(err)
	}
	create[*corev1.ConfigMap, *corev1.ConfigMapList](t, c, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "incluster-check"},
		Data:       map[string]string{"check.py": string(script)},
	})
}

// goLister runs the incluster image as the ServiceAccount lister.
func goLister(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: "lister",
			Containers: []corev1.Container{{Name: "incluster", Image: inclusterImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Env: []corev1.EnvVar{{Name: "INCLUSTER_INTERVAL", Value: "2s"}}}},
		},
	}
}

// pythonLister runs check.py from the ConfigMap incluster-check with the official client.
func pythonLister(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: "lister",
			Containers: []corev1.Container{{Name: "check", Image: pythonImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"python3", "/check/check.py"},
				Env:          []corev1.EnvVar{{Name: "INCLUSTER_INTERVAL", Value: "2s"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "check", MountPath: "/check", ReadOnly: true}}}},
			Volumes: []corev1.Volume{{Name: "check", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "incluster-check"}}}}},
		},
	}
}

// TestInClusterAccess runs a client-go program (rest.InClusterConfig, in a scratch image) and
// the official Python client (load_incluster_config) as a ServiceAccount bound to a Role that
// reads pods, on make up's cluster: both list the namespace's pods through the kubernetes
// Service with the token ServiceAccount admission mounted, and are refused secrets with a 403.
// Both kubectls' auth can-i agree with what the pods saw.
func TestInClusterAccess(t *testing.T) {
	c := requireMakeUp(t)
	requireInClusterImages(t)
	ns := c.namespace(t, "e2e-incluster")
	createLister(t, c, ns)
	createCheckScript(t, c, ns)
	pods := map[string]*corev1.Pod{"go-lister": goLister(ns, "go-lister"), "py-lister": pythonLister(ns, "py-lister")}
	for _, name := range []string{"go-lister", "py-lister"} {
		create[*corev1.Pod, *corev1.PodList](t, c, pods[name])
	}
	sa := "system:serviceaccount:" + ns + ":lister"

	for _, name := range []string{"go-lister", "py-lister"} {
		t.Run(name, func(t *testing.T) {
			p := c.waitPodRunning(t, ns, name)
			if p.Spec.ServiceAccountName != "lister" || !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
				return strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil
			}) {
				t.Errorf("pod %s: ServiceAccount %q, volumes %s: want lister with a kube-api-access projected volume",
					name, p.Spec.ServiceAccountName, dump(p.Spec.Volumes))
			}
			r := c.waitRound(t, ns, name, "listing both pods and refused secrets", 3*time.Minute, func(r inclusterRound) bool {
				return r.Pods >= 2 && contains(r.PodNames, ns+"/go-lister") && contains(r.PodNames, ns+"/py-lister") && r.SecretsCode == 403
			})
			if want := `secrets is forbidden: User "` + sa + `" cannot list resource "secrets" in API group "" in the namespace "` + ns + `"`; r.SecretsError != want {
				t.Errorf("secrets refused with %q, want %q", r.SecretsError, want)
			}
			if r.TokenSub != sa || r.TokenError != "" {
				t.Errorf("token subject %q (error %q), want %q", r.TokenSub, r.TokenError, sa)
			}
			if life := r.TokenExp - r.TokenIat; life != admissionTokenSeconds {
				t.Errorf("token lives %d s (iat %d, exp %d), want %d", life, r.TokenIat, r.TokenExp, admissionTokenSeconds)
			}
			// The pod's clock is the host's: the token was issued before the round and is still valid.
			if r.TokenIat > r.Time+5 || r.TokenExp <= r.Time {
				t.Errorf("token iat %d, exp %d at round time %d: want issued before and expiring after", r.TokenIat, r.TokenExp, r.Time)
			}
			if host, port := r.Env["KUBERNETES_SERVICE_HOST"], r.Env["KUBERNETES_SERVICE_PORT"]; host != "10.96.0.1" || port != "443" {
				t.Errorf("KUBERNETES_SERVICE_HOST=%q KUBERNETES_SERVICE_PORT=%q, want 10.96.0.1 and 443 (env %v)", host, port, r.Env)
			}
			if got := r.Env["KUBERNETES_PORT"]; got != "tcp://10.96.0.1:443" {
				t.Errorf("KUBERNETES_PORT=%q, want tcp://10.96.0.1:443", got)
			}
		})
	}

	t.Run("auth can-i", func(t *testing.T) {
		for _, k := range c.kubectls(t) {
			canI := func(args ...string) string {
				t.Helper()
				r := k.run(t, append([]string{"auth", "can-i"}, args...)...)
				if (r.stdout == "yes\n") != (r.err == nil) {
					t.Fatalf("%s kubectl auth can-i %v: the answer and the exit status disagree:\n%s", k.name, args, r)
				}
				return r.stdout
			}
			if got := canI("list", "pods", "--as", sa, "-n", ns); got != "yes\n" {
				t.Errorf("%s kubectl auth can-i list pods as %s = %q, want yes", k.name, sa, got)
			}
			if got := canI("list", "secrets", "--as", sa, "-n", ns); got != "no\n" {
				t.Errorf("%s kubectl auth can-i list secrets as %s = %q, want no", k.name, sa, got)
			}
			list := k.ok(t, "auth", "can-i", "--list", "--as", sa, "-n", ns).stdout
			if !containsRow(list, "pods [] [] [get list watch]") {
				t.Errorf("%s kubectl auth can-i --list as %s lacks the pods rule:\n%s", k.name, sa, list)
			}
			if containsRow(list, "secrets [] [] [get list watch]") || strings.Contains(list, "\nsecrets ") {
				t.Errorf("%s kubectl auth can-i --list as %s shows secrets:\n%s", k.name, sa, list)
			}
		}
	})
}

// tokenRefreshEnv opts in to the test that waits for a token to be refreshed, about ten
// minutes: `make test` runs it on its own after the rest.
const tokenRefreshEnv = "MINIK8S_E2E_TOKEN_REFRESH"

// TestInClusterTokenRefresh gives the client-go and Python pods a token of the shortest life
// Kubernetes allows (600 s) in a projected volume of their own at the well-known path. The
// kubelet replaces it after 80% of its life, and both clients keep listing pods after the
// first token has expired: they read the new one from the file.
func TestInClusterTokenRefresh(t *testing.T) {
	if os.Getenv(tokenRefreshEnv) == "" {
		t.Skipf("waits about ten minutes for a token to expire; set %s=1 to run it (make test does, beside the other tests)", tokenRefreshEnv)
	}
	c := requireMakeUp(t)
	requireInClusterImages(t)
	ns := c.namespace(t, "e2e-refresh")
	createLister(t, c, ns)
	createCheckScript(t, c, ns)
	const life = 600
	for _, p := range []*corev1.Pod{goLister(ns, "go-lister"), pythonLister(ns, "py-lister")} {
		shortToken(p, life)
		create[*corev1.Pod, *corev1.PodList](t, c, p)
	}
	first := map[string]inclusterRound{}
	for _, name := range []string{"go-lister", "py-lister"} {
		first[name] = c.waitRound(t, ns, name, "listing pods", 3*time.Minute, func(r inclusterRound) bool { return r.Pods >= 1 })
		if got := first[name].TokenExp - first[name].TokenIat; got != life {
			t.Fatalf("%s: the token lives %d s, want the %d s its volume asks", name, got, life)
		}
	}
	for _, name := range []string{"go-lister", "py-lister"} {
		expired := first[name].TokenExp
		// Refreshed at 480 s, rewritten within the kubelet's minute, read within the clients'
		// minute: a round after the first token's expiry must be made with a later one.
		after := c.waitRound(t, ns, name, "after the first token expired", time.Duration(life+240)*time.Second,
			func(r inclusterRound) bool { return r.Time > expired+5 })
		rounds, err := c.rounds(t.Context(), ns, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rounds {
			if r.Time > expired && (r.Pods < 1 || r.SecretsCode != 403) {
				t.Errorf("%s: after the first token expired at %d, a round at %d listed %d pods (%s), secrets %d",
					name, expired, r.Time, r.Pods, r.PodsError, r.SecretsCode)
			}
		}
		if after.TokenIat <= first[name].TokenIat || after.TokenExp <= expired {
			t.Errorf("%s: the token file still holds iat %d, exp %d after the first (iat %d) expired",
				name, after.TokenIat, after.TokenExp, first[name].TokenIat)
		}
	}
}

// shortToken replaces ServiceAccount admission's volume by one of the same shape whose token
// lives seconds.
func shortToken(p *corev1.Pod, seconds int64) {
	mode := int32(0o644)
	p.Spec.AutomountServiceAccountToken = new(bool)
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "short-token", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{DefaultMode: &mode, Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &seconds, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		}},
	}})
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts,
			corev1.VolumeMount{Name: "short-token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true})
	}
}

// TestHelmClusterReader installs testdata/helm/incluster-exporter, a chart in the shape of
// kube-state-metrics' (ServiceAccount, ClusterRole listing and watching a few kinds,
// ClusterRoleBinding, Deployment), with Helm on make up's cluster. Its pod lists pods across
// namespaces with its ServiceAccount's token and is refused secrets at the cluster scope; the
// uninstall takes the cluster-scoped objects away too.
func TestHelmClusterReader(t *testing.T) {
	c := requireMakeUp(t)
	requireDocker(t)
	ns := c.namespace(t, "e2e-helm-reader")
	other := c.namespace(t, "e2e-helm-other")
	// A pod in another namespace, which only a cluster-wide list shows.
	create[*corev1.Pod, *corev1.PodList](t, c, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "elsewhere"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "minik8s/pause:1.0", ImagePullPolicy: corev1.PullIfNotPresent}}},
	})
	chart, err := filepath.Abs(filepath.Join("testdata", "helm", "incluster-exporter"))
	if err != nil {
		t.Fatal(err)
	}
	helm := helmRunner(t, c.kubeconfig)
	release := ns // cluster-scoped names follow the release: one per run
	helm("install", release, chart, "--namespace", ns, "--wait", "--timeout", "3m")
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			helm("uninstall", release, "--namespace", ns)
		}
	})
	full := release + "-incluster-exporter"
	sa := "system:serviceaccount:" + ns + ":" + full
	k := c.kubectls(t)[0]
	for _, obj := range []string{"serviceaccount/" + full, "deployment/" + full} {
		k.ok(t, "get", obj, "-n", ns)
	}
	for _, obj := range []string{"clusterrole/" + full, "clusterrolebinding/" + full} {
		k.ok(t, "get", obj)
	}

	pods, err := client.MustFor[*corev1.Pod, *corev1.PodList](c.cl).List(t.Context(), ns,
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the release's pods: %v, %d of them, want 1", err, len(pods.Items))
	}
	pod := pods.Items[0].Name
	r := c.waitRound(t, ns, pod, "listing pods of other namespaces", 3*time.Minute, func(r inclusterRound) bool {
		return contains(r.PodNames, other+"/elsewhere") && contains(r.PodNames, ns+"/"+pod)
	})
	want := `secrets is forbidden: User "` + sa + `" cannot list resource "secrets" in API group "" at the cluster scope`
	if r.SecretsCode != 403 || r.SecretsError != want {
		t.Errorf("cluster-wide secrets: %d %q, want 403 %q", r.SecretsCode, r.SecretsError, want)
	}
	if r.TokenSub != sa {
		t.Errorf("the pod's token is %q's, want the chart's ServiceAccount %q", r.TokenSub, sa)
	}

	helm("uninstall", release, "--namespace", ns, "--wait", "--timeout", "2m")
	uninstalled = true
	for _, obj := range []string{"clusterrole/" + full, "clusterrolebinding/" + full} {
		if r := k.run(t, "get", obj); r.err == nil || !strings.Contains(r.stderr, "NotFound") {
			t.Errorf("%s after uninstall:\n%s", obj, r)
		}
	}
}
