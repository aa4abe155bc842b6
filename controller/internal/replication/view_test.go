package replication

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/randfill"

	"minik8s.io/controller/internal/replicaset"
)

func newRC(replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rc-uid", Generation: 2, ResourceVersion: "7"},
		Spec: corev1.ReplicationControllerSpec{
			Replicas:        &replicas,
			MinReadySeconds: 5,
			Selector:        map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "minik8s/echo:1.0"}}},
			},
		},
	}
}

// The ReplicaSet the controller sees has the ReplicationController's every spec field, its
// selector an equality one that selects as the map does.
func TestToReplicaSet(t *testing.T) {
	rc := newRC(3)
	rs := ToReplicaSet(rc)
	want := appsv1.ReplicaSetSpec{
		Replicas:        rc.Spec.Replicas,
		MinReadySeconds: 5,
		Selector:        &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template:        *rc.Spec.Template,
	}
	if diff := cmp.Diff(want, rs.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if rs.Name != "web" || rs.UID != "rc-uid" || rs.ResourceVersion != "7" || rs.Generation != 2 {
		t.Errorf("metadata %+v", rs.ObjectMeta)
	}
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	for set, want := range map[string]bool{"app=web": true, "app=web,tier=back": true, "app=db": false, "tier=front": false} {
		l, _ := labels.ConvertSelectorToLabelsMap(set)
		if got := sel.Matches(l); got != want {
			t.Errorf("%s matched %t, want %t", set, got, want)
		}
	}
	rc.Spec.Template = nil
	if got := ToReplicaSet(rc).Spec.Template; !cmp.Equal(got, corev1.PodTemplateSpec{}) {
		t.Errorf("no template became %+v", got)
	}
}

// Every status field the ReplicaSet controller writes lands in the ReplicationController's
// status, and reads back the same.
func TestStatusRoundTrip(t *testing.T) {
	f := randfill.NewWithSeed(7).NilChance(0).NumElements(1, 3).Funcs(
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(c.Int63n(1<<32), 0) },
	)
	for range 50 {
		var st appsv1.ReplicaSetStatus
		f.Fill(&st)
		st.TerminatingReplicas = nil // a ReplicationController has no such count
		rc := withStatus(newRC(1), st)
		if diff := cmp.Diff(st, ToReplicaSet(rc).Status); diff != "" {
			t.Fatalf("status through the ReplicationController (-want +got):\n%s", diff)
		}
	}
}

// A ReplicationController's pods, made by the ReplicaSet controller, name it as controller.
func TestPodsNameTheReplicationController(t *testing.T) {
	p := replicaset.PodFromTemplate(ToReplicaSet(newRC(1)), View.Kind)
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "ReplicationController" || ref.Name != "web" || ref.UID != "rc-uid" {
		t.Fatalf("controller reference %+v", ref)
	}
	if p.GenerateName != "web-" || p.Labels["tier"] != "front" {
		t.Fatalf("pod %+v", p.ObjectMeta)
	}
}
