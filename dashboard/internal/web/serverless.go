package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The serverless component's kinds, read without its Go types: the dashboard builds alone.
var (
	functionsResource  = schema.GroupVersionResource{Group: "serverless.minik8s.io", Version: "v1", Resource: "functions"}
	executionsResource = schema.GroupVersionResource{Group: "serverless.minik8s.io", Version: "v1", Resource: "workflowexecutions"}
)

type functionRow struct {
	Namespace, Name, Phase     string
	Desired, Replicas, Ready   int64
	CallsPerSecond, ErrorRatio float64
	Calls, Errors, ColdStarts  float64
	HasMetrics                 bool
	LastCall                   string
	Age                        time.Duration
}

type executionRow struct {
	Namespace, Name, Workflow, Phase, Error string
	Duration                                string
	Age                                     time.Duration
}

type serverlessData struct {
	Functions  []functionRow
	Executions []executionRow
	// Selected is the function ("namespace/name") whose calls and replicas are plotted.
	Selected string
}

func (s *Server) serverless(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	p := &page{}
	d := serverlessData{}
	d.Functions = s.functions(ctx, p)
	d.Selected = r.URL.Query().Get("function")
	if d.Selected == "" && len(d.Functions) > 0 {
		d.Selected = d.Functions[0].Namespace + "/" + d.Functions[0].Name
	}
	if d.Selected != "" {
		if _, _, ok := splitKey(d.Selected); !ok {
			p.fail("function", errorString("want namespace/name, not "+d.Selected))
			d.Selected = ""
		}
	}
	if l, err := s.cfg.Dynamic.Resource(executionsResource).List(ctx, metav1.ListOptions{}); err != nil {
		p.fail("list workflowexecutions", err)
	} else {
		for _, o := range l.Items {
			row := executionRow{Namespace: o.GetNamespace(), Name: o.GetName(), Age: s.age(o.GetCreationTimestamp())}
			row.Workflow, _, _ = unstructured.NestedString(o.Object, "spec", "workflow")
			row.Phase, _, _ = unstructured.NestedString(o.Object, "status", "phase")
			row.Error, _, _ = unstructured.NestedString(o.Object, "status", "error")
			if ms, ok, _ := unstructured.NestedInt64(o.Object, "status", "durationMilliseconds"); ok {
				row.Duration = (time.Duration(ms) * time.Millisecond).String()
			}
			d.Executions = append(d.Executions, row)
		}
		// Newest first: the page shows the latest runs.
		slices.SortStableFunc(d.Executions, func(a, b executionRow) int { return cmp.Compare(a.Age, b.Age) })
		if len(d.Executions) > 50 {
			d.Executions = d.Executions[:50]
		}
	}
	p.Data = d
	s.render(w, "serverless", p)
}

func (s *Server) functions(ctx context.Context, p *page) []functionRow {
	l, err := s.cfg.Dynamic.Resource(functionsResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		p.fail("list functions", err)
		return nil
	}
	rate := s.byLabels(ctx, p, "function:minik8s_serverless_gateway_calls:rate2m", "namespace", "function")
	ratio := s.byLabels(ctx, p, "function:minik8s_serverless_gateway_errors:ratio_rate5m", "namespace", "function")
	calls := s.byLabels(ctx, p, `sum by (namespace, function) (minik8s_serverless_gateway_calls_total{function!=""})`, "namespace", "function")
	errs := s.byLabels(ctx, p, `sum by (namespace, function) (minik8s_serverless_gateway_calls_total{function!="", code=~"5.."})`, "namespace", "function")
	cold := s.byLabels(ctx, p, `sum by (namespace, function) (minik8s_serverless_gateway_cold_starts_total)`, "namespace", "function")
	var out []functionRow
	for _, o := range l.Items {
		key := o.GetNamespace() + "/" + o.GetName()
		row := functionRow{Namespace: o.GetNamespace(), Name: o.GetName(), Age: s.age(o.GetCreationTimestamp())}
		row.Phase, _, _ = unstructured.NestedString(o.Object, "status", "phase")
		row.Desired, _, _ = unstructured.NestedInt64(o.Object, "status", "desiredReplicas")
		row.Replicas, _, _ = unstructured.NestedInt64(o.Object, "status", "replicas")
		row.Ready, _, _ = unstructured.NestedInt64(o.Object, "status", "readyReplicas")
		row.LastCall, _, _ = unstructured.NestedString(o.Object, "status", "lastCallTime")
		_, row.HasMetrics = calls[key]
		row.CallsPerSecond, row.ErrorRatio = rate[key], ratio[key]
		row.Calls, row.Errors, row.ColdStarts = calls[key], errs[key], cold[key]
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b functionRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

type errorString string

func (e errorString) Error() string { return string(e) }
