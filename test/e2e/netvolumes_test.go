package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
)

// claimPod runs script once on node with the claim mounted at /data.
func claimPod(name, node, claim string, readOnly bool, script string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "minik8s/busybox:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"sh", "-c", script}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}},
	}}
}

// volumeSteps runs the PersistentVolume steps: a claim of the default class provisioned in
// the cluster's shared directory, written from a pod on n1 and read from a pod on n2; reclaim
// Delete and Retain; and a claim that cannot bind explaining why.
func (c *netCluster) volumeSteps(t *testing.T, step func(string, func(*testing.T)), n1, n2 *netNode) {
	pvs := client.MustFor[*corev1.PersistentVolume, *corev1.PersistentVolumeList](c.cl)
	pvcs := client.MustFor[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList](c.cl)
	root := filepath.Join(c.home, "volumes") // the controller-manager's default --pv-root
	newClaim := func(t *testing.T, name, size string, class *string, mode corev1.PersistentVolumeAccessMode) {
		_, err := pvcs.Create(t.Context(), &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}, StorageClassName: class,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create claim %s: %v", name, err)
		}
	}
	bound := func(t *testing.T, name string) *corev1.PersistentVolume {
		pvc := pollUntil(t, "claim "+name, "Bound", func() (*corev1.PersistentVolumeClaim, error) {
			return pvcs.Get(t.Context(), c.ns, name, metav1.GetOptions{})
		}, func(p *corev1.PersistentVolumeClaim) bool { return p.Status.Phase == corev1.ClaimBound }, nil, c.kubeletTails)
		pv, err := pvs.Get(t.Context(), "", pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pv
	}
	finished := func(t *testing.T, name string) string {
		p := c.waitPod(t, name, "finished", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		logs := c.kubectl.ok(t, "-n", c.ns, "logs", name).stdout
		if p.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("pod %s %s:\n%s", name, p.Status.Phase, logs)
		}
		return logs
	}

	var shared *corev1.PersistentVolume
	step("a pod waits for its claim, then writes on node-1 into a volume provisioned in the shared directory", func(t *testing.T) {
		c.createPod(t, claimPod("pv-writer", n1.name, "shared", false, "echo written by $(hostname) > /data/greeting"))
		pollUntil(t, "pod pv-writer", "told its claim is missing", func() (*corev1.EventList, error) {
			return c.events.List(t.Context(), c.ns, metav1.ListOptions{FieldSelector: "involvedObject.name=pv-writer"})
		}, func(l *corev1.EventList) bool {
			for _, e := range l.Items {
				if e.Reason == "FailedMount" && strings.Contains(e.Message, `persistentvolumeclaim "shared"`) {
					return true
				}
			}
			return false
		}, nil, c.kubeletTails)
		if p := c.pod(t, "pv-writer"); p.Status.Phase != corev1.PodPending {
			t.Fatalf("pv-writer is %s without its claim", p.Status.Phase)
		}
		newClaim(t, "shared", "1Gi", nil, corev1.ReadWriteMany) // no class: the default one
		shared = bound(t, "shared")
		if shared.Spec.StorageClassName != "standard" || shared.Spec.HostPath == nil || filepath.Dir(shared.Spec.HostPath.Path) != root {
			t.Fatalf("volume %s: class %q, source %+v; want standard, a directory in %s", shared.Name, shared.Spec.StorageClassName, shared.Spec.PersistentVolumeSource, root)
		}
		finished(t, "pv-writer")
		b, err := os.ReadFile(filepath.Join(shared.Spec.HostPath.Path, "greeting"))
		if err != nil || strings.TrimSpace(string(b)) != "written by pv-writer" {
			t.Fatalf("the volume's directory holds %q, %v", b, err)
		}
	})

	step("a pod on node-2 reads the same data, read-only", func(t *testing.T) {
		c.createPod(t, claimPod("pv-reader", n2.name, "shared", true,
			"cat /data/greeting; if touch /data/new 2>/dev/null; then echo WRITABLE; fi"))
		logs := finished(t, "pv-reader")
		if strings.TrimSpace(logs) != "written by pv-writer" {
			t.Errorf("pv-reader on %s printed %q, want what pv-writer on %s wrote", n2.name, logs, n1.name)
		}
	})

	step("get pv,pvc,storageclass with Kubernetes' columns", func(t *testing.T) {
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			out := k.ok(t, "-n", c.ns, "get", "pv,pvc,storageclass").stdout
			for _, want := range []string{
				"NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
				"persistentvolume/" + shared.Name + " 1Gi RWX Delete Bound " + c.ns + "/shared standard <unset>",
				"NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
				"persistentvolumeclaim/shared Bound " + shared.Name + " 1Gi RWX standard <unset>",
				"NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
				"storageclass.storage.k8s.io/standard (default) minik8s.io/hostpath-shared Delete Immediate false",
			} {
				if !strings.Contains(squeeze(out), want) {
					t.Errorf("%s kubectl get pv,pvc,storageclass lacks %q:\n%s", k.name, want, out)
				}
			}
		}
	})

	step("deleting a claim of reclaim policy Delete removes its volume and directory", func(t *testing.T) {
		c.kubectl.ok(t, "-n", c.ns, "delete", "pod", "pv-writer", "pv-reader")
		c.kubectlReal.ok(t, "-n", c.ns, "delete", "pvc", "shared")
		pollUntil(t, "volume "+shared.Name, "deleted", func() (bool, error) {
			_, err := pvs.Get(t.Context(), "", shared.Name, metav1.GetOptions{})
			if errors.Is(err, apierror.ErrNotFound) {
				return true, nil
			}
			return false, err
		}, func(gone bool) bool { return gone }, nil, c.kubeletTails)
		if _, err := os.Stat(shared.Spec.HostPath.Path); !os.IsNotExist(err) {
			t.Errorf("directory %s still there: %v", shared.Spec.HostPath.Path, err)
		}
	})

	step("a volume of reclaim policy Retain goes Released and keeps its data", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "keep.yaml")
		writeFile(t, file, "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: keep-"+c.id+
			"\nprovisioner: minik8s.io/hostpath-shared\nreclaimPolicy: Retain\n")
		c.kubectlReal.ok(t, "apply", "-f", file)
		class := "keep-" + c.id
		newClaim(t, "kept", "2Gi", &class, corev1.ReadWriteOnce)
		pv := bound(t, "kept")
		writeFile(t, filepath.Join(pv.Spec.HostPath.Path, "data"), "precious")
		c.kubectl.ok(t, "-n", c.ns, "delete", "pvc", "kept")
		pollUntil(t, "volume "+pv.Name, "Released", func() (*corev1.PersistentVolume, error) {
			return pvs.Get(t.Context(), "", pv.Name, metav1.GetOptions{})
		}, func(v *corev1.PersistentVolume) bool { return v.Status.Phase == corev1.VolumeReleased }, nil, c.kubeletTails)
		if b, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "data")); err != nil || string(b) != "precious" {
			t.Errorf("retained data: %q, %v", b, err)
		}
		if out := squeeze(c.kubectl.ok(t, "get", "pv", pv.Name).stdout); !strings.Contains(out, " Retain Released "+c.ns+"/kept ") {
			t.Errorf("kubectl get pv: %s", out)
		}
	})

	step("a claim that cannot bind says why in kubectl describe", func(t *testing.T) {
		none := ""
		newClaim(t, "unbindable", "5Gi", &none, corev1.ReadWriteOnce)
		for _, k := range []kubectl{c.kubectlReal, c.kubectl} {
			pollUntil(t, "describe pvc unbindable ("+k.name+")", "showing why", func() (string, error) {
				return k.ok(t, "-n", c.ns, "describe", "pvc", "unbindable").stdout, nil
			}, func(out string) bool {
				return strings.Contains(out, "FailedBinding") && strings.Contains(out, "no persistent volumes available for this claim and no storage class is set") &&
					strings.Contains(out, "Pending")
			}, nil, c.kubeletTails)
		}
	})
}

// squeeze collapses runs of spaces, as tables pad their columns.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
