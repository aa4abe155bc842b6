package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"minik8s.io/bench/internal/stats"
)

// Goals of the extension tests.
const (
	// GoalCustomRatio bounds a custom object create against a ConfigMap create of the same
	// stored size: p50 latency at most this many times, throughput at least its inverse.
	GoalCustomRatio = 1.2
	// GoalWebhookAdded bounds the p50 latency one validating webhook adds to a create.
	GoalWebhookAdded = 2 * time.Millisecond
)

// ExtensionsReport holds tests 4 to 6: custom resources against ConfigMaps, and one
// validating webhook's cost.
type ExtensionsReport struct {
	// ConfigMapBytes and CustomBytes are one object of each as stored.
	ConfigMapBytes, CustomBytes int
	// SchemaApplied says the apiserver defaulted a custom object's spec.mode as the schema
	// asks; without it, its schema work is missing and the custom figures are optimistic.
	SchemaApplied bool
	// CreateCustom and CreateConfigMap are test 4's one-client create latencies.
	CreateCustom, CreateConfigMap stats.Summary
	// ThroughputCustom and ThroughputConfigMap are test 5's creates per second;
	// ThroughputOps counts them (custom, ConfigMap).
	ThroughputCustom, ThroughputConfigMap float64
	ThroughputOps                         [2]int
	// ThroughputCPU is the CPU one create cost in test 5, (custom, ConfigMap), averaged over
	// rounds: the custom objects' extra work shows in the apiserver's share, and the dynamic
	// client's in the bench clients'.
	ThroughputCPU [2]CPUPerOp

	// Webhook is test 6; nil when it was not measured, for WebhookSkipped's reason.
	Webhook        *WebhookReport
	WebhookSkipped string
}

// WebhookReport is one validating webhook's cost to ConfigMap creates.
type WebhookReport struct {
	// With and Without are one-client create latencies in a namespace the webhook selects
	// and in one it does not.
	With, Without stats.Summary
	// Server is the webhook server's own time per review, from request headers read to
	// response written; Calls is how many reviews it answered while With was measured.
	Server stats.Summary
	Calls  int
	// MetricCalls is how many calls the apiserver's webhookMetric histogram counted while
	// With was measured, zero when it has no such series; MetricP50 and MetricP99 are its
	// bucket bounds, MetricMean its sum over its count.
	MetricCalls                      int
	MetricMean, MetricP50, MetricP99 time.Duration
}

// Added is the p50 latency the webhook added.
func (w *WebhookReport) Added() time.Duration { return w.With.P50 - w.Without.P50 }

// Goals checks the extension tests against their targets; the webhook's is left out when it
// was not measured.
func (x *ExtensionsReport) Goals() []Goal {
	lat := float64(x.CreateCustom.P50) / float64(max(x.CreateConfigMap.P50, 1))
	tail := float64(x.CreateCustom.P99) / float64(max(x.CreateConfigMap.P99, 1))
	tp := ratio(x.ThroughputCustom, x.ThroughputConfigMap)
	measured := x.CreateCustom.N > 0 && x.CreateConfigMap.N > 0
	goals := []Goal{
		{Name: "custom resource create p50 vs ConfigMap", Want: fmt.Sprintf("<= %.2fx", GoalCustomRatio), Got: fmt.Sprintf("%.2fx", lat),
			Met: measured && lat <= GoalCustomRatio},
		{Name: "custom resource throughput vs ConfigMap", Want: fmt.Sprintf(">= %.2fx", 1/GoalCustomRatio), Got: fmt.Sprintf("%.2fx", tp),
			Met: x.ThroughputConfigMap > 0 && tp >= 1/GoalCustomRatio},
		{Name: "custom resource create p99 vs ConfigMap", Want: fmt.Sprintf("<= %.2fx", GoalCustomRatio), Got: fmt.Sprintf("%.2fx", tail),
			Met: measured && tail <= GoalCustomRatio},
	}
	if w := x.Webhook; w != nil {
		goals = append(goals, Goal{Name: "validating webhook added p50", Want: "<= +" + stats.Millis(GoalWebhookAdded), Got: signedMillis(w.Added()),
			Met: w.With.N > 0 && w.Without.N > 0 && w.Added() <= GoalWebhookAdded})
	}
	return goals
}

func signedMillis(d time.Duration) string {
	if d < 0 {
		return "-" + stats.Millis(-d)
	}
	return "+" + stats.Millis(d)
}

// CustomTable is tests 4 and 5 as rows under a header.
func (x *ExtensionsReport) CustomTable(clients int) [][]string {
	g := x.Goals()
	lat := fmt.Sprintf("4 create latency, 1 client, n=%d", x.CreateCustom.N)
	tp := fmt.Sprintf("5 throughput, %d clients", clients)
	return [][]string{
		{"test", "figure", "custom resource", "ConfigMap", "ratio", "goal", "met"},
		{lat, "p50", stats.Millis(x.CreateCustom.P50), stats.Millis(x.CreateConfigMap.P50), durRatio(x.CreateCustom.P50, x.CreateConfigMap.P50), g[0].Want, yesNo(g[0].Met)},
		{lat, "p99", stats.Millis(x.CreateCustom.P99), stats.Millis(x.CreateConfigMap.P99), durRatio(x.CreateCustom.P99, x.CreateConfigMap.P99), g[2].Want, yesNo(g[2].Met)},
		{lat, "mean", stats.Millis(x.CreateCustom.Mean), stats.Millis(x.CreateConfigMap.Mean), durRatio(x.CreateCustom.Mean, x.CreateConfigMap.Mean), "", ""},
		{tp, "creates/s", fmt.Sprintf("%.0f /s", x.ThroughputCustom), fmt.Sprintf("%.0f /s", x.ThroughputConfigMap),
			fmt.Sprintf("%.2fx", ratio(x.ThroughputCustom, x.ThroughputConfigMap)), g[1].Want, yesNo(g[1].Met)},
	}
}

// WebhookTable is test 6 as rows under a header: one row saying why when it was not measured.
func (x *ExtensionsReport) WebhookTable() [][]string {
	head := []string{"test", "figure", "with webhook", "without", "added", "goal", "met"}
	w := x.Webhook
	if w == nil {
		return [][]string{head, {"6 ConfigMap create, 1 client", "p50", "pending: " + x.WebhookSkipped, "", "", "<= +" + stats.Millis(GoalWebhookAdded), "-"}}
	}
	goals := x.Goals()
	g := goals[len(goals)-1]
	name := fmt.Sprintf("6 ConfigMap create, 1 client, n=%d", w.With.N)
	metric := "series absent"
	if w.MetricCalls > 0 {
		metric = fmt.Sprintf("mean %s, p50 <= %s, p99 <= %s, n=%d", stats.Millis(w.MetricMean), stats.Millis(w.MetricP50), stats.Millis(w.MetricP99), w.MetricCalls)
	}
	return [][]string{
		head,
		{name, "p50", stats.Millis(w.With.P50), stats.Millis(w.Without.P50), signedMillis(w.Added()), g.Want, yesNo(g.Met)},
		{name, "p99", stats.Millis(w.With.P99), stats.Millis(w.Without.P99), signedMillis(w.With.P99 - w.Without.P99), "", ""},
		{name, "mean", stats.Millis(w.With.Mean), stats.Millis(w.Without.Mean), signedMillis(w.With.Mean - w.Without.Mean), "", ""},
		{name, "webhook server's own handling p50/p99", stats.Millis(w.Server.P50) + " / " + stats.Millis(w.Server.P99), "", "", "", ""},
		{name, "reviews answered", fmt.Sprintf("%d/%d", w.Calls, w.With.N), "", "", "one per create", yesNo(w.Calls == w.With.N)},
		{name, webhookMetric, metric, "", "", "", ""},
	}
}

// Print writes tests 4 to 6 as Markdown tables.
func (x *ExtensionsReport) Print(w io.Writer, clients int) {
	fmt.Fprintf(w, "custom resources: %s (namespaced, structural schema, a defaulted field, status subresource) against ConfigMaps, both created as admin; stored %d against %d bytes\n",
		benchCRDName, x.CustomBytes, x.ConfigMapBytes)
	if x.SchemaApplied {
		fmt.Fprintf(w, "schema: applied (the default was set)\n\n")
	} else {
		fmt.Fprintf(w, "schema: NOT applied (no default set): the apiserver skipped validation, pruning and defaulting, so the custom figures leave their cost out\n\n")
	}
	WriteMarkdown(w, x.CustomTable(clients))
	fmt.Fprintf(w, "\nCPU per create in test 5:\n\n")
	writeCPUTable(w, []cpuPath{{"custom resource create", x.ThroughputCPU[0]}, {"ConfigMap create", x.ThroughputCPU[1]}})
	fmt.Fprintf(w, "\nadmission webhook: one ValidatingWebhookConfiguration by clientConfig.url on ConfigMap CREATE in namespaces labelled %s=on, answered allowed by an HTTPS server in the bench process\n\n", webhookLabel)
	WriteMarkdown(w, x.WebhookTable())
}

// extensions runs tests 4 to 6. A webhook test the apiserver cannot serve is reported as not
// measured, not as a failure, so the custom resource figures stand.
func (e *env) extensions(ctx context.Context) (*ExtensionsReport, error) {
	x := &ExtensionsReport{}
	e.log.Info("tests 4 and 5: custom resource creates against ConfigMap creates")
	if err := e.customResources(ctx, x); err != nil {
		return nil, fmt.Errorf("custom resources: %w", err)
	}
	e.log.Info("test 6: one validating webhook")
	err := e.webhook(ctx, x)
	switch {
	case errors.Is(err, ErrWebhooksNotServed):
		x.WebhookSkipped = err.Error()
		e.log.Warn("webhook test not measured", "reason", x.WebhookSkipped)
	case err != nil:
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return x, nil
}
