package web

import (
	"cmp"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// plotSeries is one line of a plot: [unix milliseconds, value] pairs, drawn against the left
// axis (y) or the right one (y1).
type plotSeries struct {
	Label  string       `json:"label"`
	Axis   string       `json:"axis"`
	Points [][2]float64 `json:"points"`
}

// plotAnswer is what /api/range/{plot} returns; Unit tells the page how to label values
// (ratio, bytes, cores, perSecond).
type plotAnswer struct {
	Title string `json:"title"`
	// Start and End are the window's bounds, in unix milliseconds.
	Start  float64      `json:"start,omitempty"`
	End    float64      `json:"end,omitempty"`
	Unit   string       `json:"unit"`
	Unit1  string       `json:"unit1,omitempty"`
	Series []plotSeries `json:"series"`
	Error  string       `json:"error,omitempty"`
}

// plotQuery is one PromQL query of a plot, with the label its series are named by.
type plotQuery struct {
	expr, legend, axis string
}

// name matches the Kubernetes names a plot's query may embed.
var name = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// plotQueries maps a plot and its parameters to its title, units and queries.
func plotQueries(plot string, q func(string) string) (plotAnswer, []plotQuery, error) {
	switch plot {
	case "node-cpu":
		return plotAnswer{Title: "Node CPU", Unit: "ratio"}, []plotQuery{{"instance:node_cpu_utilisation:rate2m", "node", "y"}}, nil
	case "node-memory":
		return plotAnswer{Title: "Node memory", Unit: "ratio"}, []plotQuery{{"instance:node_memory_utilisation:ratio", "node", "y"}}, nil
	case "pod-cpu", "pod-memory":
		ns, pod := q("namespace"), q("pod")
		if !name.MatchString(ns) || !name.MatchString(pod) {
			return plotAnswer{}, nil, fmt.Errorf("want namespace and pod names, have %q and %q", ns, pod)
		}
		sel := fmt.Sprintf(`namespace=%q, pod=%q, container!="", container!="POD"`, ns, pod)
		if plot == "pod-cpu" {
			return plotAnswer{Title: "CPU of " + pod, Unit: "cores"}, []plotQuery{
				{fmt.Sprintf(`max by (container) (rate(container_cpu_usage_seconds_total{%s}[2m]))`, sel), "container", "y"}}, nil
		}
		return plotAnswer{Title: "Memory of " + pod, Unit: "bytes"}, []plotQuery{
			{fmt.Sprintf(`max by (container) (container_memory_working_set_bytes{%s})`, sel), "container", "y"}}, nil
	case "function":
		ns, fn, ok := splitKey(q("function"))
		if !ok || !name.MatchString(ns) || !name.MatchString(fn) {
			return plotAnswer{}, nil, fmt.Errorf("want function=namespace/name, have %q", q("function"))
		}
		return plotAnswer{Title: "Function " + ns + "/" + fn, Unit: "perSecond", Unit1: "replicas"}, []plotQuery{
			{fmt.Sprintf(`sum(function:minik8s_serverless_gateway_calls:rate2m{namespace=%q, function=%q})`, ns, fn), "=calls/s", "y"},
			{fmt.Sprintf(`max(minik8s_serverless_autoscaler_desired_replicas{function=%q})`, ns+"/"+fn), "=desired replicas", "y1"},
			// The pods that ran: a function's pods are its Deployment's, named <function>-<hash>-<suffix>.
			{fmt.Sprintf(`count(max by (pod) (container_memory_working_set_bytes{namespace=%q, pod=~%q, container!="", container!="POD"}))`,
				ns, regexp.QuoteMeta(fn)+"-[a-z0-9]+-[a-z0-9]+"), "=pods", "y1"},
		}, nil
	}
	return plotAnswer{}, nil, fmt.Errorf("no plot %q", plot)
}

func (s *Server) rangePlot(w http.ResponseWriter, r *http.Request) {
	ans, queries, err := plotQueries(r.PathValue("plot"), r.URL.Query().Get)
	if err != nil {
		s.writeJSON(w, http.StatusBadRequest, plotAnswer{Error: err.Error()})
		return
	}
	if s.cfg.Metrics == nil {
		s.writeJSON(w, http.StatusServiceUnavailable, plotAnswer{Error: "no Prometheus configured"})
		return
	}
	ctx, cancel := s.callCtx(r)
	defer cancel()
	end := s.cfg.Now()
	start := end.Add(-s.cfg.Window)
	ans.Start, ans.End = float64(start.UnixMilli()), float64(end.UnixMilli())
	ans.Series = []plotSeries{}
	for _, pq := range queries {
		series, err := s.cfg.Metrics.QueryRange(ctx, pq.expr, start, end, s.cfg.Step)
		if err != nil {
			ans.Error = err.Error()
			s.writeJSON(w, http.StatusBadGateway, ans)
			return
		}
		for _, sr := range series {
			ps := plotSeries{Axis: pq.axis, Points: make([][2]float64, 0, len(sr.Points))}
			if l, ok := strings.CutPrefix(pq.legend, "="); ok {
				ps.Label = l
			} else {
				ps.Label = cmp.Or(sr.Labels[pq.legend], pq.expr)
			}
			for _, pt := range sr.Points {
				ps.Points = append(ps.Points, [2]float64{float64(pt.Time.UnixMilli()), pt.Value})
			}
			ans.Series = append(ans.Series, ps)
		}
	}
	slices.SortStableFunc(ans.Series, func(a, b plotSeries) int {
		return cmp.Or(cmp.Compare(a.Axis, b.Axis), cmp.Compare(a.Label, b.Label))
	})
	s.writeJSON(w, http.StatusOK, ans)
}

// splitKey splits "namespace/name".
func splitKey(key string) (string, string, bool) {
	ns, n, ok := strings.Cut(key, "/")
	return ns, n, ok && ns != "" && n != ""
}
