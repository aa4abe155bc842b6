package server

import (
	"net/http"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicationControllers are served with Kubernetes' defaults and table, a scale subresource,
// and advertised as rc in the category all (kubectl apply --prune and cluster-info dump list
// them).
func TestReplicationControllerServed(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	path := "/api/v1/namespaces/" + ns + "/replicationcontrollers"
	var rc corev1.ReplicationController
	h.mustDo(http.StatusCreated, "POST", path, "", map[string]any{
		"apiVersion": "v1", "kind": "ReplicationController", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "minik8s/busybox:1.0"}}},
		}},
	}, &rc)
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || rc.Spec.Replicas == nil || *rc.Spec.Replicas != 1 {
		t.Fatalf("defaults: %+v %+v", rc.ObjectMeta.Labels, rc.Spec)
	}

	var sc autoscalingv1.Scale
	h.mustDo(http.StatusOK, "GET", path+"/web/scale", "", nil, &sc)
	if sc.Spec.Replicas != 1 || sc.Status.Selector != "app=web" {
		t.Fatalf("scale %+v", sc)
	}
	h.mustDo(http.StatusOK, "PATCH", path+"/web/scale", "application/merge-patch+json", map[string]any{"spec": map[string]any{"replicas": 3}}, &sc)
	h.mustDo(http.StatusOK, "GET", path+"/web", "", nil, &rc)
	if *rc.Spec.Replicas != 3 {
		t.Fatalf("replicas after scale %d", *rc.Spec.Replicas)
	}

	var tbl metav1.Table
	code, _ := h.do("GET", path, "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	if code != http.StatusOK || len(tbl.ColumnDefinitions) != 8 || tbl.ColumnDefinitions[1].Name != "Desired" ||
		len(tbl.Rows) != 1 || tbl.Rows[0].Cells[7] != "app=web" {
		t.Fatalf("table %d %+v", code, tbl)
	}

	var st metav1.Status
	code, _ = h.do("POST", path, "", map[string]any{"apiVersion": "v1", "kind": "ReplicationController",
		"metadata": map[string]any{"name": "bad"}, "spec": map[string]any{"selector": map[string]any{"app": "x"}}}, &st)
	if code != http.StatusUnprocessableEntity || st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Field != "spec.template" {
		t.Fatalf("no template: %d %+v", code, st)
	}

	var list metav1.APIResourceList
	h.mustDo(http.StatusOK, "GET", "/api/v1", "", nil, &list)
	found := map[string]bool{}
	for _, r := range list.APIResources {
		if r.Name == "replicationcontrollers" && len(r.ShortNames) == 1 && r.ShortNames[0] == "rc" && len(r.Categories) == 1 && r.Categories[0] == "all" {
			found[r.Name] = true
		}
		if r.Name == "replicationcontrollers/scale" || r.Name == "replicationcontrollers/status" {
			found[r.Name] = true
		}
	}
	if len(found) != 3 {
		t.Fatalf("advertised %v", found)
	}
}
