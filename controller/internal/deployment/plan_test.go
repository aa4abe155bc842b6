package deployment

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func newDeployment(replicas int32, surge, unavailable string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "echo:a"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr(intstr.Parse(surge)), MaxUnavailable: ptr(intstr.Parse(unavailable)),
			}},
			RevisionHistoryLimit:    ptr(int32(10)),
			ProgressDeadlineSeconds: ptr(int32(600)),
		},
	}
	return d
}

func TestFenceposts(t *testing.T) {
	tests := []struct {
		surge, unavailable string
		desired            int32
		wantS, wantU       int32
	}{
		{"25%", "25%", 10, 3, 2},  // surge rounds up, unavailable down
		{"25%", "25%", 4, 1, 1},   // exact
		{"25%", "25%", 1, 1, 0},   // 0.25 up to 1, down to 0
		{"0%", "0%", 10, 0, 1},    // both zero: one may be unavailable
		{"0", "0", 3, 0, 1},       // as ints
		{"2", "1", 3, 2, 1},       // ints taken as they are
		{"50%", "0", 5, 3, 0},     // 2.5 up
		{"10%", "10%", 25, 3, 2},  // 2.5 up, 2.5 down
		{"100%", "100%", 7, 7, 7}, // whole
		{"0", "33%", 10, 0, 3},    // 3.3 down
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_%s_of_%d", tt.surge, tt.unavailable, tt.desired), func(t *testing.T) {
			s, u, err := Fenceposts(ptr(intstr.Parse(tt.surge)), ptr(intstr.Parse(tt.unavailable)), tt.desired)
			if err != nil {
				t.Fatal(err)
			}
			if s != tt.wantS || u != tt.wantU {
				t.Errorf("surge %d unavailable %d, want %d %d", s, u, tt.wantS, tt.wantU)
			}
		})
	}
	if _, _, err := Fenceposts(ptr(intstr.FromString("x%")), nil, 3); err == nil {
		t.Error("a malformed percentage was accepted")
	}
	d := newDeployment(10, "100%", "100%")
	if got := MaxUnavailable(d); got != 10 {
		t.Errorf("MaxUnavailable = %d, want at most replicas (10)", got)
	}
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if MaxSurge(d) != 0 || MaxUnavailable(d) != 0 {
		t.Error("Recreate has a surge or unavailability")
	}
}

func TestTemplateHash(t *testing.T) {
	d := newDeployment(1, "1", "0")
	h := TemplateHash(&d.Spec.Template, nil)
	if h2 := TemplateHash(d.Spec.Template.DeepCopy(), nil); h2 != h {
		t.Errorf("hash of a copy %q != %q", h2, h)
	}
	for _, c := range h {
		if !strconv.IsPrint(c) || (c >= 'a' && c <= 'z' && (c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u')) {
			t.Errorf("hash %q has %q: names are spelled without vowels", h, c)
		}
	}
	changed := d.Spec.Template.DeepCopy()
	changed.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "b"}}
	if TemplateHash(changed, nil) == h {
		t.Error("an env change kept the hash")
	}
	if TemplateHash(&d.Spec.Template, ptr(int32(1))) == h {
		t.Error("a collision count kept the hash")
	}
	if TemplateHash(&d.Spec.Template, ptr(int32(0))) == h {
		t.Error("collision count 0 hashed as none (Kubernetes writes its bytes)")
	}
	// The value is pinned: the name of a ReplicaSet must not change between releases of the
	// controller, or every Deployment would roll out again after an upgrade.
	if want := "c959c5dd9"; h != want {
		t.Errorf("hash %q, want %q", h, want)
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	d := newDeployment(1, "1", "0")
	rs := NewReplicaSet(d, 1)
	if rs.Spec.Template.Labels[HashLabel] == "" || rs.Spec.Selector.MatchLabels[HashLabel] == "" {
		t.Fatalf("new ReplicaSet without the hash label: %+v", rs.Spec)
	}
	if !EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
		t.Error("a ReplicaSet's template differs from its Deployment's beyond the hash")
	}
	other := d.Spec.Template.DeepCopy()
	other.Labels["x"] = "y"
	if EqualIgnoreHash(&rs.Spec.Template, other) {
		t.Error("a label change is ignored")
	}
	if d.Spec.Template.Labels[HashLabel] != "" || d.Spec.Selector.MatchLabels[HashLabel] != "" {
		t.Error("NewReplicaSet changed the Deployment")
	}
	if rs.Name != "web-"+rs.Spec.Template.Labels[HashLabel] {
		t.Errorf("name %q", rs.Name)
	}
}

func rsAt(name string, rev int64, replicas, available int32, created time.Duration) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
		CreationTimestamp: metav1.NewTime(t0.Add(created)), Annotations: map[string]string{RevisionAnnotation: strconv.FormatInt(rev, 10)}},
		Spec:   appsv1.ReplicaSetSpec{Replicas: ptr(replicas), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "old:" + name}}}}},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available}}
	return rs
}

func TestRevisions(t *testing.T) {
	d := newDeployment(3, "1", "0")
	cur := NewReplicaSet(d, 1)
	cur.CreationTimestamp = metav1.NewTime(t0.Add(time.Hour))
	olds := []*appsv1.ReplicaSet{rsAt("a", 1, 0, 0, 0), rsAt("b", 4, 0, 0, time.Minute), rsAt("c", 2, 0, 0, 2*time.Minute)}
	newRS, old := FindNew(d, append(olds, cur))
	if newRS != cur || len(old) != 3 {
		t.Fatalf("FindNew = %v, %d old", newRS, len(old))
	}
	if got := MaxRevision(old); got != 4 {
		t.Errorf("MaxRevision = %d, want 4", got)
	}
	// Rolling back to revision 2 (rs c): it becomes revision 5 and remembers 2.
	back := rsAt("c", 2, 0, 0, 0)
	back.Annotations[RevisionHistoryAnnotation] = "1"
	if !setNewRSAnnotations(d, back, 5, true) {
		t.Fatal("no change reported")
	}
	if back.Annotations[RevisionAnnotation] != "5" || back.Annotations[RevisionHistoryAnnotation] != "1,2" {
		t.Errorf("annotations %v, want revision 5, history 1,2", back.Annotations)
	}
	if setNewRSAnnotations(d, back, 5, true) {
		t.Error("a second call changed something")
	}
	d.Annotations = map[string]string{ChangeCauseAnnotation: "kubectl set image", lastAppliedAnnotation: "{}", RevisionAnnotation: "9"}
	setNewRSAnnotations(d, back, 5, true)
	if back.Annotations[ChangeCauseAnnotation] != "kubectl set image" || back.Annotations[lastAppliedAnnotation] != "" || back.Annotations[RevisionAnnotation] != "5" {
		t.Errorf("annotations %v: change-cause copied, last-applied and revision not", back.Annotations)
	}
	long := ""
	for i := range 600 {
		long = appendHistory(long, strconv.Itoa(1000+i))
	}
	if len(long) > maxHistoryChars || long[len(long)-4:] != "1599" {
		t.Errorf("history of %d chars ending %q", len(long), long[len(long)-4:])
	}
}
