package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestWorkloadStatus(t *testing.T) {
	three, one := int32(3), int32(1)
	ds := func(gen int64, st workloadStatus) *workload {
		w := &workload{ObjectMeta: metav1.ObjectMeta{Name: "agent", Generation: gen}, Status: st}
		w.Spec.UpdateStrategy.Type = "RollingUpdate"
		return w
	}
	sts := func(gen int64, st workloadStatus, partition *int32) *workload {
		w := ds(gen, st)
		w.Name = "db"
		w.Spec.Replicas = &three
		if partition != nil {
			w.Spec.UpdateStrategy.RollingUpdate = &struct {
				Partition *int32 `json:"partition,omitempty"`
			}{partition}
		}
		return w
	}
	onDelete := ds(1, workloadStatus{ObservedGeneration: 1})
	onDelete.Spec.UpdateStrategy.Type = "OnDelete"
	tests := []struct {
		name, kind string
		w          *workload
		want       string
		done       bool
		wantErr    bool
	}{
		{"ds not observed", "DaemonSet", ds(2, workloadStatus{ObservedGeneration: 1}), "Waiting for daemon set spec update to be observed...\n", false, false},
		{"ds updating", "DaemonSet", ds(2, workloadStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1}),
			"Waiting for daemon set \"agent\" rollout to finish: 1 out of 3 new pods have been updated...\n", false, false},
		{"ds available", "DaemonSet", ds(2, workloadStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 2}),
			"Waiting for daemon set \"agent\" rollout to finish: 2 of 3 updated pods are available...\n", false, false},
		{"ds done", "DaemonSet", ds(2, workloadStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}),
			"daemon set \"agent\" successfully rolled out\n", true, false},
		{"ds OnDelete", "DaemonSet", onDelete, "", true, true},
		{"sts not observed", "StatefulSet", sts(1, workloadStatus{}, nil), "Waiting for statefulset spec update to be observed...\n", false, false},
		{"sts ready", "StatefulSet", sts(1, workloadStatus{ObservedGeneration: 1, ReadyReplicas: 1}, nil), "Waiting for 2 pods to be ready...\n", false, false},
		{"sts rolling", "StatefulSet", sts(1, workloadStatus{ObservedGeneration: 1, ReadyReplicas: 3, UpdatedReplicas: 1, UpdateRevision: "db-2", CurrentRevision: "db-1"}, nil),
			"waiting for statefulset rolling update to complete 1 pods at revision db-2...\n", false, false},
		{"sts done", "StatefulSet", sts(1, workloadStatus{ObservedGeneration: 1, ReadyReplicas: 3, CurrentReplicas: 3, UpdateRevision: "db-2", CurrentRevision: "db-2"}, nil),
			"statefulset rolling update complete 3 pods at revision db-2...\n", true, false},
		{"sts partitioned", "StatefulSet", sts(1, workloadStatus{ObservedGeneration: 1, ReadyReplicas: 3, UpdatedReplicas: 1}, &one),
			"Waiting for partitioned roll out to finish: 1 out of 2 new pods have been updated...\n", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, done, err := WorkloadStatus(tt.kind, tt.w)
			if msg != tt.want || done != tt.done || (err != nil) != tt.wantErr {
				t.Errorf("WorkloadStatus = %q, %v, %v; want %q, %v, error %v", msg, done, err, tt.want, tt.done, tt.wantErr)
			}
		})
	}
}

func revision(n int64, image string) *appsv1.ControllerRevision {
	data := `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}}}`
	return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "agent-" + image}, Revision: n, Data: runtime.RawExtension{Raw: []byte(data)}}
}

func TestRevisionHistoryAndUndo(t *testing.T) {
	revs := []*appsv1.ControllerRevision{revision(3, "c"), revision(1, "a"), revision(2, "b")}
	revs[2].Annotations = map[string]string{changeCauseAnnotation: "kubectl set image ds/agent c=b"}
	var out bytes.Buffer
	RevisionHistory(&out, "daemonset.apps/agent", []*appsv1.ControllerRevision{revs[1], revs[2], revs[0]})
	want := "daemonset.apps/agent \nREVISION  CHANGE-CAUSE\n1         <none>\n2         kubectl set image ds/agent c=b\n3         <none>\n\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	tests := []struct {
		to      int64
		want    string
		wantErr string
	}{
		{0, "agent-b", ""},
		{1, "agent-a", ""},
		{7, "", "unable to find specified revision 7 in history"},
	}
	for _, tt := range tests {
		r, err := UndoTarget(revs, tt.to)
		switch {
		case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
			t.Errorf("UndoTarget(%d) error %v, want %q", tt.to, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || r.Name != tt.want):
			t.Errorf("UndoTarget(%d) = %v, %v; want %s", tt.to, r, err, tt.want)
		}
	}
	if _, err := UndoTarget(revs[:1], 0); err == nil || err.Error() != "no last revision to roll back to" {
		t.Errorf("one revision: %v", err)
	}
	tmpl, err := RevisionTemplate(revs[0])
	if err != nil || tmpl.Spec.Containers[0].Image != "c" || tmpl.Labels["app"] != "agent" {
		t.Errorf("RevisionTemplate = %+v, %v", tmpl, err)
	}
}

func TestRevisionArg(t *testing.T) {
	o := &options{}
	tests := []struct {
		args []string
		ok   bool
		kind string
	}{
		{[]string{"daemonset/agent"}, true, "DaemonSet"},
		{[]string{"ds", "agent"}, true, "DaemonSet"},
		{[]string{"sts/db"}, true, "StatefulSet"},
		{[]string{"statefulset.apps/db"}, true, "StatefulSet"},
		{[]string{"deployment/web"}, false, ""},
	}
	for _, tt := range tests {
		if !tt.ok {
			if _, ok, _ := o.revisionArg(tt.args); ok {
				t.Errorf("%v taken for a revision kind", tt.args)
			}
			continue
		}
		typ, _, _ := strings.Cut(tt.args[0], "/")
		k := revisionKindOf(typ)
		if k == nil || k.kind != tt.kind {
			t.Errorf("%v: kind %v, want %s", tt.args, k, tt.kind)
		}
	}
}
