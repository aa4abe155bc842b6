package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
)

// rolloutWeb is a Service and a Deployment of the echo image behind it: a readiness probe, a
// surge of one and no unavailability, and a shutdown delay so that a pod leaving the Service
// keeps answering until every node has dropped it.
const rolloutWeb = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {port: 80, targetPort: 8080}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: echo
        image: minik8s/echo:1.0
        env:
        - {name: VERSION, value: a}
        - {name: SHUTDOWN_DELAY, value: 8s}
        ports:
        - containerPort: 8080
        readinessProbe:
          httpGet: {path: /, port: 8080}
          periodSeconds: 1
`

// upstreamNginx is kubernetes.io's nginx-deployment example with only the image swapped for a
// local one.
const upstreamNginx = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: minik8s/nginx:1.0
        ports:
        - containerPort: 80
`

const rolloutRS = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: keep3
spec:
  replicas: 3
  selector:
    matchLabels: {app: keep3}
  template:
    metadata:
      labels: {app: keep3}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: minik8s/echo:1.0
`

// TestRollouts runs ReplicaSets and Deployments on two nodes: a rolling update and a
// rollback behind a Service while a node keeps asking it (no request may fail), the upstream
// nginx example applied unchanged with the real kubectl, and a ReplicaSet of 3 that recovers
// from a deleted pod and from a node killed under it.
func TestRollouts(t *testing.T) {
	c := startNetCluster(t, "r1", "r2")
	// A lost node is Unknown 20 s after its last renewal, its pods evicted 5 s later.
	c.startControlPlane(t, nil, []string{"--node-monitor-grace-period", "20s", "--pod-eviction-timeout", "5s", "--node-monitor-period", "1s"})
	r1, r2 := c.byShort["r1"], c.byShort["r2"]
	dir := t.TempDir()
	deployments := client.MustFor[*appsv1.Deployment, *appsv1.DeploymentList](c.cl)
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	apply := func(t *testing.T, k kubectl, name, body string) {
		t.Helper()
		path := filepath.Join(dir, name+".yaml")
		writeFile(t, path, body)
		k.ok(t, "-n", c.ns, "apply", "-f", path)
	}
	// running lists the pods of app that run and are ready, not terminating.
	running := func(t *testing.T, app string) []corev1.Pod {
		t.Helper()
		l, err := c.pods.List(t.Context(), c.ns, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			t.Fatal(err)
		}
		var out []corev1.Pod
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && podRunning(&p) && ready(&p) {
				out = append(out, p)
			}
		}
		return out
	}
	waitRunning := func(t *testing.T, app string, n int, ok func([]corev1.Pod) bool) []corev1.Pod {
		t.Helper()
		return pollUntil(t, "pods of "+app, fmt.Sprintf("%d running and ready", n),
			func() ([]corev1.Pod, error) { return running(t, app), nil },
			func(ps []corev1.Pod) bool { return len(ps) == n && (ok == nil || ok(ps)) }, nil, c.kubeletTails)
	}

	step("a rolling update and its undo behind a Service: no request fails", func(t *testing.T) {
		apply(t, c.kubectlReal, "web", rolloutWeb)
		c.kubectlReal.ok(t, "-n", c.ns, "rollout", "status", "deployment/web", "--timeout=120s")
		svc, err := client.MustFor[*corev1.Service, *corev1.ServiceList](c.cl).Get(t.Context(), c.ns, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + svc.Spec.ClusterIP + "/"
		// The client: one request at a time from r1 through the ClusterIP, each answer's pod
		// name on a line (or FAIL), until the stop file appears.
		stop := filepath.Join(dir, "stop-client")
		// A rolled-out Deployment is not yet a Service every node has programmed: wait (up to
		// 60 s) until r1 reaches it before counting.
		ready := fmt.Sprintf(`for i in $(seq 600); do curl -s -m 3 -o /dev/null %s && exit 0; sleep 0.1; done; exit 1`, url)
		if out, err := c.script(t.Context(), nil, "node.sh", "exec", r1.name, "--", "sh", "-c", ready); err != nil {
			t.Fatalf("r1 never reached the Service at %s: %v\n%s", url, err, out)
		}
		script := fmt.Sprintf(`while [ ! -e %s ]; do b=$(curl -s -m 3 %s); rc=$?; echo "$b" | grep -o '"hostname": *"[^"]*"' || echo "FAIL curl-exit=$rc at $(date +%%T.%%N)"; sleep 0.05; done`, stop, url)
		var (
			wg   sync.WaitGroup
			out  string
			cerr error
		)
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, cerr = c.script(context.WithoutCancel(t.Context()), nil, "node.sh", "exec", r1.name, "--", "sh", "-c", script)
		}()
		stopClient := func() []string {
			if err := os.WriteFile(stop, nil, 0o600); err != nil {
				t.Error(err)
			}
			wg.Wait()
			if cerr != nil {
				t.Fatalf("client: %v\n%s", cerr, out)
			}
			return strings.Split(strings.TrimSpace(out), "\n")
		}
		defer func() {
			if _, err := os.Stat(stop); err != nil {
				stopClient()
			}
		}()
		time.Sleep(2 * time.Second)

		// A to B with the real kubectl, back to A with ours.
		c.kubectlReal.ok(t, "-n", c.ns, "set", "env", "deployment/web", "VERSION=b")
		if out := c.kubectl.ok(t, "-n", c.ns, "rollout", "status", "deployment/web", "--timeout=120s").stdout; !strings.HasSuffix(out, "deployment \"web\" successfully rolled out\n") {
			t.Errorf("our rollout status said:\n%s", out)
		}
		mid := deployment(t, deployments, c.ns, "web")
		c.kubectl.ok(t, "-n", c.ns, "rollout", "undo", "deployment/web")
		c.kubectlReal.ok(t, "-n", c.ns, "rollout", "status", "deployment/web", "--timeout=120s")
		time.Sleep(2 * time.Second)
		lines := stopClient()

		// Answers name their pod, web-<pod-template-hash>-<suffix>: the client must have
		// heard A, then B, then A again.
		var failures []string
		var versions []string
		for _, l := range lines {
			if strings.HasPrefix(l, "FAIL") {
				failures = append(failures, l)
				continue
			}
			pod := strings.Trim(l[strings.LastIndex(l, " ")+1:], `"`)
			v := pod[:strings.LastIndex(pod, "-")]
			if len(versions) == 0 || versions[len(versions)-1] != v {
				versions = append(versions, v)
			}
		}
		if len(failures) > 0 || len(lines) < 50 {
			t.Errorf("%d of %d requests failed during the rollouts (want none of at least 50):\n%s", len(failures), len(lines), strings.Join(failures, "\n"))
			t.Logf("the kubeproxy log of %s:\n%s", r1.name, tailFile(filepath.Join(r1.dir, "logs", "kubeproxy.log"), 60))
		}
		if len(versions) < 3 || versions[0] != versions[len(versions)-1] || !slices.ContainsFunc(versions, func(v string) bool { return v != versions[0] }) {
			t.Errorf("versions answering in turn %v: want A, then B, then A again", versions)
		}
		end := deployment(t, deployments, c.ns, "web")
		if mid.Annotations["deployment.kubernetes.io/revision"] != "2" || end.Annotations["deployment.kubernetes.io/revision"] != "3" {
			t.Errorf("revisions %q then %q, want 2 then 3", mid.Annotations["deployment.kubernetes.io/revision"], end.Annotations["deployment.kubernetes.io/revision"])
		}
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			hist := k.ok(t, "-n", c.ns, "rollout", "history", "deployment/web").stdout
			if !strings.Contains(hist, "REVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n") {
				t.Errorf("%s kubectl rollout history:\n%s", k.name, hist)
			}
			table := k.ok(t, "-n", c.ns, "get", "deploy,rs").stdout
			if row := rowOf(table, "deployment.apps/web"); len(row) < 5 || row[1] != "3/3" || row[2] != "3" || row[3] != "3" {
				t.Errorf("%s kubectl get deploy: READY UP-TO-DATE AVAILABLE not 3/3 3 3:\n%s", k.name, table)
			}
			var headers []string
			for _, l := range strings.Split(table, "\n") {
				if strings.HasPrefix(l, "NAME ") {
					headers = append(headers, strings.Join(strings.Fields(l), " "))
				}
			}
			if want := []string{"NAME READY UP-TO-DATE AVAILABLE AGE", "NAME DESIRED CURRENT READY AGE"}; !slices.Equal(headers, want) {
				t.Errorf("%s kubectl get deploy,rs: columns %q, want %q:\n%s", k.name, headers, want, table)
			}
		}
	})

	step("the upstream nginx Deployment applies unchanged with the real kubectl", func(t *testing.T) {
		apply(t, c.kubectlReal, "nginx", upstreamNginx)
		c.kubectlReal.ok(t, "-n", c.ns, "rollout", "status", "deployment/nginx-deployment", "--timeout=120s")
		pods := waitRunning(t, "nginx", 3, nil)
		for _, p := range pods {
			if h := p.Labels["pod-template-hash"]; h == "" || !strings.HasPrefix(p.Name, "nginx-deployment-"+h+"-") {
				t.Errorf("pod %s: name and pod-template-hash %q do not match", p.Name, h)
			}
		}
		c.kubectl.ok(t, "-n", c.ns, "scale", "deployment/nginx-deployment", "--replicas=1")
		waitRunning(t, "nginx", 1, nil)
	})

	step("a ReplicaSet of 3 replaces a deleted pod", func(t *testing.T) {
		apply(t, c.kubectl, "keep3", rolloutRS)
		before := waitRunning(t, "keep3", 3, nil)
		gone := before[0].Name
		c.kubectl.ok(t, "-n", c.ns, "delete", "pod", gone)
		waitRunning(t, "keep3", 3, func(ps []corev1.Pod) bool {
			return !slices.ContainsFunc(ps, func(p corev1.Pod) bool { return p.Name == gone })
		})
	})

	step("and the pods of a killed node elsewhere", func(t *testing.T) {
		// Kill the node that runs keep3's pods (r2 if both do), so its pods must move.
		pods := running(t, "keep3")
		victim, survivor := r2, r1
		if !slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Spec.NodeName == r2.name }) {
			victim, survivor = r1, r2
		}
		c.nodeSh(t, "kill", victim.name)
		waitRunning(t, "keep3", 3, func(ps []corev1.Pod) bool {
			for _, p := range ps {
				if p.Spec.NodeName != survivor.name {
					return false
				}
			}
			return true
		})
	})
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deployment(t *testing.T, ds *client.Typed[*appsv1.Deployment, *appsv1.DeploymentList], ns, name string) *appsv1.Deployment {
	t.Helper()
	d, err := ds.Get(t.Context(), ns, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
