package describe

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestDescribe(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := corev1.Event{Type: "Normal", Reason: "Scheduled", Message: "Successfully assigned default/web to n1",
		Source: corev1.EventSource{Component: "default-scheduler"}, LastTimestamp: metav1.NewTime(now.Add(-90 * time.Second))}
	tests := []struct {
		name   string
		obj    string
		events []corev1.Event
		want   []string
	}{
		{name: "pod", events: []corev1.Event{ev}, obj: `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: app, image: "nginx:1"}]}
status: {phase: Running, hostIP: 10.0.0.1, podIP: 10.244.1.2, containerStatuses: [{name: app, ready: true, restartCount: 2, image: "nginx:1", imageID: "", state: {running: {startedAt: "2025-01-01T11:00:00Z"}}}]}
`, want: []string{"Name:         web\n", "Node:         n1/10.0.0.1\n", "Labels:       app=web\n", "Status:       Running\n",
			"  app:\n", "    Image:          nginx:1\n", "    Restart Count:  2\n",
			"Events:\n  Type    Reason     Age   From               Message\n", "  Normal  Scheduled  90s   default-scheduler  Successfully assigned default/web to n1\n"}},
		{name: "claim", events: []corev1.Event{{Type: "Normal", Reason: "FailedBinding", Message: "no persistent volumes available for this claim and no storage class is set",
			Source: corev1.EventSource{Component: "controller-manager"}, LastTimestamp: metav1.NewTime(now.Add(-5 * time.Second))}}, obj: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec: {storageClassName: "", accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}, volumeMode: Filesystem}
status: {phase: Pending}
`, want: []string{"Name:          data\n", "StorageClass:  \n", "Status:        Pending\n", "Capacity:      \n", "VolumeMode:    Filesystem\n",
			"  Normal  FailedBinding  5s    controller-manager  no persistent volumes available for this claim and no storage class is set\n"}},
		{name: "volume", obj: `
apiVersion: v1
kind: PersistentVolume
metadata: {name: pvc-1}
spec: {storageClassName: standard, capacity: {storage: 1Gi}, accessModes: [ReadWriteMany, ReadWriteOnce], persistentVolumeReclaimPolicy: Delete,
  claimRef: {namespace: default, name: data}, hostPath: {path: /srv/v/pvc-1, type: Directory}}
status: {phase: Bound}
`, want: []string{"Name:            pvc-1\n", "Claim:           default/data\n", "Reclaim Policy:  Delete\n", "Access Modes:    RWO,RWX\n",
			"Capacity:        1Gi\n", "  Type:          HostPath (bare host directory volume)\n", "  Path:          /srv/v/pvc-1\n", "  HostPathType:  Directory\n"}},
		{name: "generic with no events", obj: `
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: n1, namespace: kube-node-lease}
spec: {holderIdentity: n1}
`, want: []string{"Kind:         Lease\n", "Spec:\n  Holder Identity:  n1\nEvents:             <none>\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tt.obj), &u.Object); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := ObjectAt(&b, u, tt.events, now); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// A custom resource reads as the real kubectl's generic describer shows it.
func TestDescribeGeneric(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`
apiVersion: crd.e2e.minik8s.io/v1
kind: Widget
metadata:
  name: w1
  namespace: default
  labels: {app: e2e}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: "{}"}
  creationTimestamp: "2026-11-28T12:18:17Z"
  generation: 1
  resourceVersion: "11"
  uid: 153ba695-9ff7-450a-ac77-aff7740aaddd
  managedFields: [{manager: kubectl}]
spec:
  color: blue
  replicas: 1
  ports: [{name: http, containerPort: 80}, 8080]
  x-y.z: q
`), &u.Object); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := ObjectAt(&b, u, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	want := `Name:         w1
Namespace:    default
Labels:       app=e2e
Annotations:  <none>
API Version:  crd.e2e.minik8s.io/v1
Kind:         Widget
Metadata:
  Creation Timestamp:  2026-11-28T12:18:17Z
  Generation:          1
  Resource Version:    11
  UID:                 153ba695-9ff7-450a-ac77-aff7740aaddd
Spec:
  Color:  blue
  Ports:
    Container Port:  80
    Name:            http
    8080
  Replicas:  1
  x-y.z:     q
Events:      <none>
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFieldLabel(t *testing.T) {
	for in, want := range map[string]string{
		"apiVersion": "API Version", "creationTimestamp": "Creation Timestamp", "uid": "UID", "podIP": "Pod Ip",
		"HTTPServer": "Http Server", "replicas": "Replicas", "x-y": "X - Y", "port8080": "port8080", "selfLink": "Self Link",
	} {
		if got := fieldLabel(in); got != want {
			t.Errorf("fieldLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
