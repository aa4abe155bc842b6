package describe

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// maxValue is how much of a JSON value describe shows on one line.
const maxValue = 120

// workflow describes a Workflow: its states, one line each, with where they lead.
func (p *writer) workflow(w *serverlessv1.Workflow) {
	p.meta(w.ObjectMeta, true)
	p.line(0, "CreationTimestamp:\t%s", w.CreationTimestamp.Time.Format(time.RFC1123Z))
	if w.Spec.Comment != "" {
		p.line(0, "Comment:\t%s", oneLine(w.Spec.Comment))
	}
	p.line(0, "Timeout:\t%s", secondsOr(w.Spec.TimeoutSeconds, "300s (default)"))
	p.line(0, "Start At:\t%s", w.Spec.StartAt)
	p.line(0, "States:")
	p.states(1, w.Spec.States)
}

func (p *writer) states(level int, states map[string]serverlessv1.State) {
	names := make([]string, 0, len(states))
	for n := range states {
		names = append(names, n)
	}
	sort.Strings(names)
	rows := [][]string{{"Name", "Type", "Details", "Next"}, {"----", "----", "-------", "----"}}
	for _, n := range names {
		st := states[n]
		rows = append(rows, []string{n, string(st.Type), orDefault(stateDetails(st), "-"), stateNext(st)})
	}
	p.table(level, rows)
	for _, n := range names {
		st := states[n]
		for i, b := range st.Branches {
			p.line(level, "%s branch %d (start at %s):", n, i, b.StartAt)
			p.states(level+1, b.States)
		}
		if st.Iterator != nil {
			p.line(level, "%s iterator (start at %s):", n, st.Iterator.StartAt)
			p.states(level+1, st.Iterator.States)
		}
	}
}

// stateDetails is what a state does, in short.
func stateDetails(st serverlessv1.State) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	switch st.Type {
	case serverlessv1.StateTask:
		add("function %s", st.Function)
		if st.TimeoutSeconds != nil {
			add("timeout %ds", *st.TimeoutSeconds)
		}
	case serverlessv1.StateChoice:
		add("%d rules", len(st.Choices))
	case serverlessv1.StatePass:
		if st.Result != nil {
			add("result %s", clip(st.Result.String()))
		}
	case serverlessv1.StateWait:
		switch {
		case st.Seconds != nil:
			add("%ds", *st.Seconds)
		case st.SecondsPath != "":
			add("seconds at %s", st.SecondsPath)
		case st.Timestamp != "":
			add("until %s", st.Timestamp)
		default:
			add("until the time at %s", st.TimestampPath)
		}
	case serverlessv1.StateFail:
		add("error %s", orDefault(st.Error, "States.Fail"))
	case serverlessv1.StateParallel:
		add("%d branches", len(st.Branches))
	case serverlessv1.StateMap:
		add("items at %s", orDefault(st.ItemsPath, "$"))
		if st.MaxConcurrency > 0 {
			add("%d at once", st.MaxConcurrency)
		}
	}
	for _, f := range []struct{ name, v string }{{"input", st.InputPath}, {"result", st.ResultPath}, {"output", st.OutputPath}} {
		if f.v != "" && f.v != "$" {
			add("%s %s", f.name, f.v)
		}
	}
	if len(st.Retry) > 0 {
		add("retry on %s", errorNames(st.Retry[0].ErrorEquals, len(st.Retry)))
	}
	return strings.Join(parts, ", ")
}

func errorNames(names []string, rules int) string {
	s := strings.Join(names, "|")
	if rules > 1 {
		s += fmt.Sprintf(" (+%d rules)", rules-1)
	}
	return s
}

// stateNext lists where a state leads: next or end, the choices and default, the catches.
func stateNext(st serverlessv1.State) string {
	var out []string
	switch {
	case st.End, st.Type == serverlessv1.StateSucceed:
		out = append(out, "(end)")
	case st.Type == serverlessv1.StateFail:
		out = append(out, "(fail)")
	case st.Next != "":
		out = append(out, st.Next)
	}
	for _, r := range st.Choices {
		out = append(out, r.Next)
	}
	if st.Default != "" {
		out = append(out, st.Default+" (default)")
	}
	for _, c := range st.Catch {
		out = append(out, fmt.Sprintf("%s (on %s)", c.Next, strings.Join(c.ErrorEquals, "|")))
	}
	return strings.Join(out, ", ")
}

// workflowExecution describes an execution: its outcome and the trace, one line per step,
// then each failed step's cause.
func (p *writer) workflowExecution(e *serverlessv1.WorkflowExecution) {
	p.meta(e.ObjectMeta, true)
	p.line(0, "CreationTimestamp:\t%s", e.CreationTimestamp.Time.Format(time.RFC1123Z))
	st := &e.Status
	p.line(0, "Workflow:\t%s", e.Spec.Workflow)
	p.line(0, "Input:\t%s", clip(e.Spec.Input.String()))
	p.line(0, "Phase:\t%s", orDefault(st.Phase, "Pending"))
	p.line(0, "Started:\t%s", p.when(st.StartTime))
	switch {
	case st.CompletionTime != nil && st.DurationMilliseconds > 0:
		p.line(0, "Duration:\t%s", stepDuration(st.DurationMilliseconds))
	case st.CompletionTime != nil && st.StartTime != nil:
		p.line(0, "Duration:\t%s", HumanDuration(st.CompletionTime.Sub(st.StartTime.Time)))
	case st.StartTime != nil:
		p.line(0, "Running For:\t%s", HumanDuration(p.now.Sub(st.StartTime.Time)))
	}
	if st.Output != nil {
		p.line(0, "Output:\t%s", clip(st.Output.String()))
	}
	if st.Error != "" {
		p.line(0, "Error:\t%s", st.Error)
		p.line(0, "Cause:\t%s", clip(oneLine(st.Cause)))
	}
	if len(st.Steps) == 0 {
		p.line(0, "Steps:\t<none>")
		return
	}
	p.line(0, "Steps:")
	rows := [][]string{{"#", "Name", "Type", "Duration", "Attempts", "Input", "Output", "Error"},
		{"-", "----", "----", "--------", "--------", "-----", "------", "-----"}}
	for i, s := range st.Steps {
		attempts := "1"
		if s.Attempts > 1 {
			attempts = fmt.Sprint(s.Attempts)
		}
		out := "-"
		if s.Output != nil {
			out = clipShort(s.Output.String())
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), s.Name, string(s.Type), stepDuration(s.DurationMilliseconds), attempts,
			clipShort(s.Input.String()), out, orDefault(s.Error, "-")})
	}
	p.table(1, rows)
	if st.StepsOmitted > 0 {
		p.line(1, "(%d more steps not kept)", st.StepsOmitted)
	}
	for i, s := range st.Steps {
		if s.Error == "" || s.Cause == "" {
			continue
		}
		p.line(0, "Step %d (%s) %s:", i+1, s.Name, s.Error)
		for _, l := range strings.Split(tail(s.Cause, 8), "\n") {
			p.line(1, "%s", strings.ReplaceAll(l, "\t", " "))
		}
	}
}

func stepDuration(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", ms)
	}
	return HumanDuration(time.Duration(ms) * time.Millisecond)
}

func clip(s string) string {
	if len(s) > maxValue {
		return s[:maxValue] + "..."
	}
	return s
}

func clipShort(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// table writes rows aligned among themselves only, not with the "Key:" lines around them.
func (p *writer) table(level int, rows [][]string) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	for _, r := range rows {
		for i := range r {
			r[i] = strings.ReplaceAll(r[i], "\t", " ")
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
	for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
		p.line(level, "%s", strings.TrimRight(l, " "))
	}
}
