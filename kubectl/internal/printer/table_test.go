package printer

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func podTable() *metav1.Table {
	meta := func(ns string, labels string) runtime.RawExtension {
		return runtime.RawExtension{Raw: []byte(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"namespace":"` + ns + `"` + labels + `}}`)}
	}
	return &metav1.Table{
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string"}, {Name: "Ready", Type: "string"}, {Name: "Status", Type: "string"},
			{Name: "Restarts", Type: "integer"}, {Name: "Age", Type: "string"}, {Name: "IP", Type: "string", Priority: 1},
			{Name: "Node", Type: "string", Priority: 1},
		},
		Rows: []metav1.TableRow{
			{Cells: []any{"nginx-7c5ddbdf54-x2x9z", "1/1", "Running", float64(0), "5m", "10.244.1.5", "node-1"}, Object: meta("default", `,"labels":{"b":"2","a":"1"}`)},
			{Cells: []any{"db", "0/1", "Pending", float64(12), "10s", nil, nil}, Object: meta("kube-system", "")},
		},
	}
}

func TestPrintTable(t *testing.T) {
	tests := []struct {
		name string
		opts TableOptions
		want string
	}{
		{name: "default", want: "" +
			"NAME                     READY   STATUS    RESTARTS   AGE\n" +
			"nginx-7c5ddbdf54-x2x9z   1/1     Running   0          5m\n" +
			"db                       0/1     Pending   12         10s\n"},
		{name: "wide", opts: TableOptions{Wide: true}, want: "" +
			"NAME                     READY   STATUS    RESTARTS   AGE   IP           NODE\n" +
			"nginx-7c5ddbdf54-x2x9z   1/1     Running   0          5m    10.244.1.5   node-1\n" +
			"db                       0/1     Pending   12         10s   <none>       <none>\n"},
		{name: "all namespaces with labels", opts: TableOptions{WithNamespace: true, ShowLabels: true}, want: "" +
			"NAMESPACE     NAME                     READY   STATUS    RESTARTS   AGE   LABELS\n" +
			"default       nginx-7c5ddbdf54-x2x9z   1/1     Running   0          5m    a=1,b=2\n" +
			"kube-system   db                       0/1     Pending   12         10s   <none>\n"},
		{name: "no headers with kind prefix", opts: TableOptions{NoHeaders: true, NamePrefix: "pod/"}, want: "" +
			"pod/nginx-7c5ddbdf54-x2x9z   1/1   Running   0     5m\n" +
			"pod/db                       0/1   Pending   12    10s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := PrintTable(&b, podTable(), tt.opts); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAlignerKeepsWidthsForLaterRows(t *testing.T) {
	var b bytes.Buffer
	a := NewAligner(&b)
	if err := a.Print([]string{"NAME", "READY", "STATUS"}, []string{"web", "0/1", "Pending"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Print([]string{"web", "1/1", "Running"}); err != nil {
		t.Fatal(err)
	}
	want := "NAME   READY   STATUS\nweb    0/1     Pending\nweb    1/1     Running\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestKindName(t *testing.T) {
	tests := map[schema.GroupVersionKind]string{
		{Version: "v1", Kind: "Pod"}:                                           "pod",
		{Group: "apps", Version: "v1", Kind: "Deployment"}:                     "deployment.apps",
		{Group: "serverless.minik8s.io", Version: "v1", Kind: "Function"}:      "function.serverless.minik8s.io",
		{Group: "autoscaling", Version: "v2", Kind: "HorizontalPodAutoscaler"}: "horizontalpodautoscaler.autoscaling",
	}
	for gvk, want := range tests {
		t.Run(want, func(t *testing.T) {
			if got := KindName(gvk); got != want {
				t.Errorf("KindName(%v) = %q, want %q", gvk, got, want)
			}
		})
	}
}
