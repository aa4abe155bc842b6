package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/client"
	"minik8s.io/shared/podstatus"
)

// statefulSetManifest is a headless Service and a StatefulSet of three whose pods keep, in
// their claim, the name and time they first started with, and serve it.
const statefulSetManifest = `apiVersion: v1
kind: Service
metadata:
  name: web
  labels: {app: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports:
  - {name: web, port: 8080}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: main
        image: minik8s/busybox:1.0
        imagePullPolicy: IfNotPresent
        env: [{name: VERSION, value: "1"}]
        command: ["sh", "-c", "[ -f /data/id ] || echo $(hostname)-$(date +%s%N) > /data/id; trap 'exit 0' TERM; while true; do sleep 1 & wait; done"]
        readinessProbe:
          exec: {command: ["cat", "/data/id"]}
          periodSeconds: 1
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
`

// TestStatefulSetCluster runs a StatefulSet on three nodes: pods made in ordinal order, each
// once the one before is Ready, with claims provisioned in the shared directory; their names
// resolved by cluster DNS from another pod, and the headless Service's name to all of them; a
// deleted pod back under its name with its data; a rolling update held at a partition, then
// finished; kubectl scale and get; and the documentation's web example with both kubectls.
func TestStatefulSetCluster(t *testing.T) {
	c := startNetCluster(t, "1", "2", "3")
	c.startControlPlane(t, nil, nil)
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	sets := client.MustFor[*appsv1.StatefulSet, *appsv1.StatefulSetList](c.cl)
	pvcs := client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c.cl)
	dir := t.TempDir()
	ready := func(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && podRunning(p) && podstatus.Ready(p) }
	waitSet := func(t *testing.T, ns, what string, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
		t.Helper()
		return pollUntil(t, "statefulset "+ns+"/web", what, func() (*appsv1.StatefulSet, error) {
			return sets.Get(t.Context(), ns, "web", metav1.GetOptions{})
		}, cond, nil, c.kubeletTails)
	}
	idOf := func(t *testing.T, pod string) string {
		return strings.TrimSpace(c.inPod(t, c.kubectl, pod, "cat /data/id"))
	}

	ids := map[string]string{}
	step("pods start in ordinal order, each once the one before is Ready, with their claims", func(t *testing.T) {
		file := filepath.Join(dir, "web.yaml")
		writeFile(t, file, statefulSetManifest)
		c.kubectlReal.ok(t, "-n", c.ns, "apply", "-f", file)
		waitSet(t, c.ns, "3 ready", func(s *appsv1.StatefulSet) bool {
			return s.Status.ReadyReplicas == 3 && s.Status.CurrentRevision == s.Status.UpdateRevision
		})
		var prev *corev1.Pod
		for i := range 3 {
			name := fmt.Sprintf("web-%d", i)
			p := c.pod(t, name)
			if prev != nil {
				readyAt := podstatus.ReadySince(prev)
				if p.CreationTimestamp.Time.Before(readyAt) {
					t.Errorf("%s made at %s, before %s was Ready at %s", name, p.CreationTimestamp, prev.Name, readyAt)
				}
			}
			if v := p.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "data-"+name {
				t.Errorf("%s's first volume %+v, want claim data-%s", name, v, name)
			}
			claim, err := pvcs.Get(t.Context(), c.ns, "data-"+name, metav1.GetOptions{})
			if err != nil || claim.Status.Phase != corev1.ClaimBound {
				t.Errorf("claim data-%s: %v %v, want Bound", name, err, claim)
			}
			if h := strings.TrimSpace(c.inPod(t, c.kubectl, name, "hostname")); h != name {
				t.Errorf("%s's hostname is %q", name, h)
			}
			fqdn := name + ".web." + c.ns + ".svc.cluster.local"
			if hosts := c.inPod(t, c.kubectl, name, "cat /etc/hosts"); !strings.Contains(hosts, p.Status.PodIP+"\t"+fqdn+"\t"+name) {
				t.Errorf("%s's /etc/hosts lacks %s %s:\n%s", name, p.Status.PodIP, fqdn, hosts)
			}
			ids[name] = idOf(t, name)
			if !strings.HasPrefix(ids[name], name+"-") {
				t.Errorf("%s keeps %q in its claim", name, ids[name])
			}
			prev = p
		}
	})

	step("cluster DNS answers each pod's name and the headless Service with them all", func(t *testing.T) {
		client := sleeper("sts-client")
		c.createPod(t, client)
		c.waitPod(t, "sts-client", "Running", podRunning)
		var all []string
		for i := range 3 {
			name := fmt.Sprintf("web-%d", i)
			ip := c.pod(t, name).Status.PodIP
			all = append(all, ip)
			fqdn := name + ".web." + c.ns + ".svc.cluster.local"
			eventually(t, netTimeout, fqdn+" resolving to "+ip, func() bool {
				return slices.Equal(answerAddrs(c.inPod(t, c.kubectl, "sts-client", "nslookup "+fqdn+" 2>&1 || true")), []string{ip})
			})
		}
		slices.Sort(all)
		got := answerAddrs(c.inPod(t, c.kubectl, "sts-client", "nslookup web."+c.ns+".svc.cluster.local 2>&1 || true"))
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Errorf("the headless Service resolves to %q, want the pods' %q", got, all)
		}
	})

	step("a deleted pod comes back under its name with its data", func(t *testing.T) {
		old := c.pod(t, "web-1")
		c.kubectl.ok(t, "-n", c.ns, "delete", "pod", "web-1")
		c.waitPod(t, "web-1", "made again and Ready", func(p *corev1.Pod) bool { return p.UID != old.UID && ready(p) })
		if got := idOf(t, "web-1"); got != ids["web-1"] {
			t.Errorf("web-1 came back with %q in its claim, want %q", got, ids["web-1"])
		}
	})

	step("a rolling update held at partition 2 updates web-2 only, then all", func(t *testing.T) {
		c.kubectlReal.ok(t, "-n", c.ns, "patch", "statefulset", "web", "-p",
			`{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}},"template":{"spec":{"containers":[{"name":"main","env":[{"name":"VERSION","value":"2"}]}]}}}}`)
		s := waitSet(t, c.ns, "web-2 updated", func(s *appsv1.StatefulSet) bool {
			return s.Status.ObservedGeneration == s.Generation && s.Status.UpdatedReplicas == 1 && s.Status.ReadyReplicas == 3 && s.Status.CurrentReplicas == 2
		})
		for i, want := range []string{s.Status.CurrentRevision, s.Status.CurrentRevision, s.Status.UpdateRevision} {
			name := fmt.Sprintf("web-%d", i)
			if got := c.pod(t, name).Labels[appsv1.ControllerRevisionHashLabelKey]; got != want {
				t.Errorf("%s at revision %q, want %q", name, got, want)
			}
		}
		c.kubectlReal.ok(t, "-n", c.ns, "patch", "statefulset", "web", "-p", `{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}`)
		waitSet(t, c.ns, "rolled out", func(s *appsv1.StatefulSet) bool {
			return s.Status.UpdatedReplicas == 3 && s.Status.ReadyReplicas == 3 && s.Status.CurrentRevision == s.Status.UpdateRevision
		})
		for i := range 3 {
			name := fmt.Sprintf("web-%d", i)
			if v := strings.TrimSpace(c.inPod(t, c.kubectl, name, "echo $VERSION")); v != "2" {
				t.Errorf("%s runs VERSION %q after the rollout", name, v)
			}
			if got := idOf(t, name); got != ids[name] {
				t.Errorf("%s has %q in its claim after the update, want %q", name, got, ids[name])
			}
		}
	})

	step("kubectl get and scale", func(t *testing.T) {
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := squeeze(k.ok(t, "-n", c.ns, "get", "sts", "-o", "wide").stdout)
			if !strings.Contains(out, "NAME READY AGE CONTAINERS IMAGES") || !strings.Contains(out, "web 3/3 ") || !strings.Contains(out, " main minik8s/busybox:1.0") {
				t.Errorf("%s kubectl get sts -o wide:\n%s", k.name, out)
			}
		}
		c.kubectl.ok(t, "-n", c.ns, "scale", "sts", "web", "--replicas=1")
		waitSet(t, c.ns, "scaled to 1", func(s *appsv1.StatefulSet) bool { return s.Status.Replicas == 1 && s.Status.ReadyReplicas == 1 })
		for _, name := range []string{"data-web-1", "data-web-2"} {
			if _, err := pvcs.Get(t.Context(), c.ns, name, metav1.GetOptions{}); err != nil {
				t.Errorf("claim %s after scaling down: %v", name, err)
			}
		}
		c.kubectlReal.ok(t, "-n", c.ns, "scale", "statefulset", "web", "--replicas=3")
		waitSet(t, c.ns, "scaled to 3", func(s *appsv1.StatefulSet) bool { return s.Status.ReadyReplicas == 3 })
		if got := idOf(t, "web-2"); got != ids["web-2"] {
			t.Errorf("web-2 came back with %q, want its old claim's %q", got, ids["web-2"])
		}
	})

	step("the documentation's web example with both kubectls: claims of its class then ordered start and stable names", func(t *testing.T) {
		manifest := filepath.Join("testdata", "docs", "statefulset.yaml")
		spaces := map[string]kubectl{c.ns + "-docs": c.kubectlReal, c.ns + "-docs-ours": c.kubectl}
		for ns, k := range spaces {
			createNamespace(t, c.kubectlReal, ns)
			out := k.ok(t, "-n", ns, "apply", "-f", manifest).stdout
			if !strings.Contains(out, "service/nginx created") || !strings.Contains(out, "statefulset.apps/web created") {
				t.Errorf("%s kubectl apply:\n%s", k.name, out)
			}
		}
		// The example names the class my-storage-class, which no cluster has by default: as in
		// Kubernetes, the first claim waits for it and the pods after web-0 are not made.
		for ns := range spaces {
			pollUntil(t, "claim "+ns+"/www-web-0", "Pending for its missing class", func() (*corev1.EventList, error) {
				return c.events.List(t.Context(), ns, metav1.ListOptions{FieldSelector: "involvedObject.name=www-web-0"})
			}, func(l *corev1.EventList) bool {
				return slices.ContainsFunc(l.Items, func(e corev1.Event) bool {
					return e.Reason == "ProvisioningFailed" && strings.Contains(e.Message, `storageclass.storage.k8s.io "my-storage-class" not found`)
				})
			}, nil, c.kubeletTails)
			if claim, err := pvcs.Get(t.Context(), ns, "www-web-0", metav1.GetOptions{}); err != nil || claim.Status.Phase != corev1.ClaimPending {
				t.Errorf("claim www-web-0 in %s: %v %s, want Pending", ns, err, dump(claim))
			}
			if _, err := c.pods.Get(t.Context(), ns, "web-1", metav1.GetOptions{}); err == nil {
				t.Errorf("web-1 made in %s while web-0 waits for its claim", ns)
			}
		}
		// The administrator provides the class, on this cluster's provisioner.
		class := filepath.Join(dir, "my-storage-class.yaml")
		writeFile(t, class, "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: my-storage-class\nprovisioner: minik8s.io/hostpath-shared\n")
		c.kubectlReal.ok(t, "apply", "-f", class)
		for ns, k := range spaces {
			waitSet(t, ns, "3 available", func(s *appsv1.StatefulSet) bool { return s.Status.AvailableReplicas == 3 })
			for i := range 3 {
				name := fmt.Sprintf("web-%d", i)
				p, err := c.pods.Get(t.Context(), ns, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 {
					// minReadySeconds: 10 holds each pod back until the one before has been Ready that long.
					prev, err := c.pods.Get(t.Context(), ns, fmt.Sprintf("web-%d", i-1), metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if availableAt := podstatus.ReadySince(prev).Add(10 * time.Second); p.CreationTimestamp.Time.Before(availableAt) {
						t.Errorf("%s/%s made at %s, before %s was available at %s", ns, name, p.CreationTimestamp, prev.Name, availableAt)
					}
				}
				claim, err := pvcs.Get(t.Context(), ns, "www-"+name, metav1.GetOptions{})
				if err != nil || claim.Status.Phase != corev1.ClaimBound || claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "my-storage-class" {
					t.Errorf("claim %s/www-%s: %v %s, want Bound of my-storage-class", ns, name, err, dump(claim))
				}
				fqdn := name + ".nginx." + ns + ".svc.cluster.local"
				eventually(t, netTimeout, fqdn+" resolving to "+p.Status.PodIP, func() bool {
					return slices.Equal(answerAddrs(c.inPod(t, c.kubectl, "sts-client", "nslookup "+fqdn+" 2>&1 || true")), []string{p.Status.PodIP})
				})
			}
			pods := squeeze(k.ok(t, "-n", ns, "get", "pods", "-l", "app=nginx").stdout)
			for _, want := range []string{"web-0 1/1 Running 0", "web-1 1/1 Running 0", "web-2 1/1 Running 0"} {
				if !strings.Contains(pods, want) {
					t.Errorf("%s kubectl get pods -l app=nginx lacks %q:\n%s", k.name, want, pods)
				}
			}
			claims := squeeze(k.ok(t, "-n", ns, "get", "pvc", "-l", "app=nginx").stdout)
			for _, want := range []string{"www-web-0 Bound", "www-web-1 Bound", "www-web-2 Bound"} {
				if !strings.Contains(claims, want) {
					t.Errorf("%s kubectl get pvc -l app=nginx lacks %q:\n%s", k.name, want, claims)
				}
			}
			k.ok(t, "-n", ns, "delete", "-f", manifest)
		}
		c.kubectlReal.ok(t, "delete", "-f", class)
	})
}
