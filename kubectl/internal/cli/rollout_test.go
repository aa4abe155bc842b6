package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func deploymentWith(gen, observed int64, replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
	st.ObservedGeneration = observed
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: &replicas}, Status: st}
}

func TestRolloutStatus(t *testing.T) {
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		want    string
		done    bool
		wantErr bool
	}{
		{"not observed", deploymentWith(2, 1, 3, appsv1.DeploymentStatus{}), "Waiting for deployment spec update to be observed...\n", false, false},
		{"updating", deploymentWith(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1}),
			"Waiting for deployment \"web\" rollout to finish: 1 out of 3 new replicas have been updated...\n", false, false},
		{"old pending", deploymentWith(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3}),
			"Waiting for deployment \"web\" rollout to finish: 1 old replicas are pending termination...\n", false, false},
		{"availability", deploymentWith(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2}),
			"Waiting for deployment \"web\" rollout to finish: 2 of 3 updated replicas are available...\n", false, false},
		{"done", deploymentWith(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3}),
			"deployment \"web\" successfully rolled out\n", true, false},
		{"deadline", deploymentWith(2, 2, 3, appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}),
			"", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, done, err := RolloutStatus(tt.d)
			if msg != tt.want || done != tt.done || (err != nil) != tt.wantErr {
				t.Errorf("RolloutStatus = %q, %v, %v; want %q, %v, error %v", msg, done, err, tt.want, tt.done, tt.wantErr)
			}
		})
	}
}

func rsRev(name, rev string, image string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{revisionAnnotation: rev, "team": name}},
		Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}},
		}},
	}
}

func TestHistoryAndRevisions(t *testing.T) {
	rss := []*appsv1.ReplicaSet{rsRev("b", "3", "echo:b"), rsRev("a", "1", "echo:a"), rsRev("c", "4", "echo:c")}
	rss[0].Annotations[changeCauseAnnotation] = "kubectl set image deployment/web c=echo:b"
	var out bytes.Buffer
	History(&out, "deployment.apps/web", rss)
	want := "deployment.apps/web \nREVISION  CHANGE-CAUSE\n1         <none>\n3         kubectl set image deployment/web c=echo:b\n4         <none>\n\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	tests := []struct {
		rev     int64
		want    string
		wantErr bool
	}{
		{0, "b", false}, // the one before the latest
		{1, "a", false},
		{4, "c", false},
		{2, "", true},
	}
	for _, tt := range tests {
		rs, err := ForRevision(rss, tt.rev)
		if (err != nil) != tt.wantErr || (err == nil && rs.Name != tt.want) {
			t.Errorf("ForRevision(%d) = %v, %v; want %s", tt.rev, rs, err, tt.want)
		}
	}
	if _, err := ForRevision(rss[:1], 0); err == nil {
		t.Error("a single revision has a previous one")
	}
}

func TestRollbackPatch(t *testing.T) {
	rs := rsRev("a", "1", "echo:a")
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{revisionAnnotation: "2", "team": "other", lastAppliedAnnotation: "{}"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "echo:b"}}},
		}}}
	patch, err := RollbackPatch(d, rs)
	if err != nil {
		t.Fatal(err)
	}
	var ops []struct {
		Op, Path string
		Value    json.RawMessage
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	var tmpl corev1.PodTemplateSpec
	var ann map[string]string
	_ = json.Unmarshal(ops[0].Value, &tmpl)
	_ = json.Unmarshal(ops[1].Value, &ann)
	if ops[0].Path != "/spec/template" || tmpl.Spec.Containers[0].Image != "echo:a" || tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" {
		t.Errorf("template op %s %+v", ops[0].Path, tmpl)
	}
	wantAnn := map[string]string{revisionAnnotation: "2", lastAppliedAnnotation: "{}", "team": "a"}
	if diff := cmp.Diff(wantAnn, ann); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	d.Spec.Template.Spec.Containers[0].Image = "echo:a"
	if p, _ := RollbackPatch(d, rs); p != nil {
		t.Errorf("a rollback to the running template patches %s", p)
	}
}

func TestImagePatch(t *testing.T) {
	dep := mustObj(t, `
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      initContainers: [{name: init, image: busybox}]
      containers: [{name: c, image: echo:a}, {name: side, image: nginx}]
`)
	tests := []struct {
		name    string
		pairs   []string
		want    string
		changed bool
		wantErr bool
	}{
		{"one", []string{"c=echo:b"}, `{"spec":{"template":{"spec":{"containers":[{"image":"echo:b","name":"c"}]}}}}`, true, false},
		{"unchanged", []string{"c=echo:a"}, `{"spec":{"template":{"spec":{"containers":[{"image":"echo:a","name":"c"}]}}}}`, false, false},
		{"all", []string{"*=x"}, `{"spec":{"template":{"spec":{"containers":[{"image":"x","name":"c"},{"image":"x","name":"side"}],"initContainers":[{"image":"x","name":"init"}]}}}}`, true, false},
		{"unknown container", []string{"nope=x"}, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed, err := ImagePatch(dep, tt.pairs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if string(got) != tt.want || changed != tt.changed {
				t.Errorf("ImagePatch = %s, %v; want %s, %v", got, changed, tt.want, tt.changed)
			}
		})
	}
	pod := mustObj(t, `{kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: a}]}}`)
	if got, _, _ := ImagePatch(pod, []string{"c=b"}); string(got) != `{"spec":{"containers":[{"image":"b","name":"c"}]}}` {
		t.Errorf("pod patch %s", got)
	}
}
