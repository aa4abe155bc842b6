package describe

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// buildLogLines is how much of a build's log tail describe shows.
const buildLogLines = 20

// function describes a serverless Function: what it runs and how it scales, what the
// serverless component reports (version, pods, last call), the last image build with the tail
// of its log, and the schedules with their last calls.
func (p *writer) function(f *serverlessv1.Function) {
	p.meta(f.ObjectMeta, true)
	p.line(0, "CreationTimestamp:\t%s", f.CreationTimestamp.Time.Format(time.RFC1123Z))
	spec, st := &f.Spec, &f.Status
	p.line(0, "Runtime:\t%s", orDefault(spec.Runtime, "python3"))
	p.line(0, "Handler:\t%s", spec.Handler)
	p.line(0, "Source:\t%s", sourceSummary(spec.Source))
	p.line(0, "Requirements:\t%s", orNone(strings.Join(requirementsSummary(spec.Requirements), ", ")))
	p.line(0, "Timeout:\t%s", secondsOr(spec.TimeoutSeconds, "<default>"))
	sc := &spec.Scale
	p.line(0, "Scale:")
	p.line(1, "Replicas:\t%s to %s", int32Or(sc.MinReplicas, "0"), int32Or(sc.MaxReplicas, "<default>"))
	if sc.TargetConcurrency != nil {
		p.line(1, "Target Concurrency:\t%d per pod", *sc.TargetConcurrency)
	} else {
		p.line(1, "Target Concurrency:\t<default>")
	}
	if sc.TargetRequestsPerSecond != nil {
		p.line(1, "Target Rate:\t%d calls/s per pod", *sc.TargetRequestsPerSecond)
	}
	if sc.ContainerConcurrency != nil && *sc.ContainerConcurrency > 0 {
		p.line(1, "Container Concurrency:\t%d", *sc.ContainerConcurrency)
	}
	p.line(1, "Max Queue:\t%s", int32Or(sc.MaxQueue, "<default>"))
	p.line(1, "Stable Window:\t%s", secondsOr(sc.StableWindowSeconds, "<default>"))
	p.line(1, "Idle Before Zero:\t%s", secondsOr(sc.IdleSeconds, "<default>"))
	if len(spec.Resources.Limits) > 0 || len(spec.Resources.Requests) > 0 {
		p.line(0, "Resources:")
		p.resources(1, "Limits", spec.Resources.Limits)
		p.resources(1, "Requests", spec.Resources.Requests)
	}
	if len(spec.Env) == 0 {
		p.line(0, "Environment:\t<none>")
	} else {
		p.line(0, "Environment:")
		for _, e := range spec.Env {
			p.line(1, "%s:\t%s", e.Name, e.Value)
		}
	}

	p.line(0, "Status:")
	p.line(1, "Phase:\t%s", orDefault(st.Phase, "Pending"))
	version := "<none>"
	if st.Version > 0 {
		version = fmt.Sprintf("v%d", st.Version)
		if st.SourceHash != "" {
			version += " (source " + shortHash(st.SourceHash) + ")"
		}
	}
	p.line(1, "Version:\t%s", version)
	p.line(1, "Image:\t%s", orNone(st.Image))
	p.line(1, "Replicas:\t%d desired | %d current | %d ready", st.DesiredReplicas, st.Replicas, st.ReadyReplicas)
	p.line(1, "Last Call:\t%s", p.when(st.LastCallTime))
	p.conditions(1, st.Conditions)

	if b := st.Build; b == nil {
		p.line(0, "Build:\t<none>")
	} else {
		p.line(0, "Build:")
		p.line(1, "Version:\tv%d", b.Version)
		p.line(1, "Phase:\t%s", b.Phase)
		if b.Message != "" {
			p.line(1, "Message:\t%s", oneLine(b.Message))
		}
		if b.StartTime != nil {
			p.line(1, "Started:\t%s", p.when(b.StartTime))
			end := p.now
			if b.CompletionTime != nil {
				end = b.CompletionTime.Time
			}
			p.line(1, "Duration:\t%s", HumanDuration(end.Sub(b.StartTime.Time)))
		}
		if log := tail(b.Log, buildLogLines); log == "" {
			p.line(1, "Log:\t<none>")
		} else {
			p.line(1, "Log (last lines):")
			for _, l := range strings.Split(log, "\n") {
				p.line(2, "%s", strings.ReplaceAll(l, "\t", " "))
			}
		}
	}

	if len(spec.Schedules) == 0 {
		p.line(0, "Schedules:\t<none>")
	} else {
		last := map[string]serverlessv1.FunctionScheduleStatus{}
		for _, s := range st.Schedules {
			last[s.Name] = s
		}
		p.line(0, "Schedules:")
		p.line(1, "Name\tSchedule\tInput\tLast Call\tLast Result")
		p.line(1, "----\t--------\t-----\t---------\t-----------")
		for _, s := range spec.Schedules {
			l := last[s.Name]
			p.line(1, "%s\t%s\t%s\t%s\t%s", s.Name, s.Schedule, orDefault(oneLine(s.Input), "{}"), p.when(l.LastScheduleTime), orNone(oneLine(l.LastResult)))
		}
	}
}

// conditions prints metav1.Conditions as a table, or nothing when there are none.
func (p *writer) conditions(level int, cs []metav1.Condition) {
	if len(cs) == 0 {
		return
	}
	p.line(level, "Conditions:")
	p.line(level+1, "Type\tStatus\tReason\tMessage")
	p.line(level+1, "----\t------\t------\t-------")
	for _, c := range cs {
		p.line(level+1, "%s \t%s\t%s\t%s", c.Type, c.Status, c.Reason, oneLine(c.Message))
	}
}

// when is a time as "90s ago (RFC 1123)", or <none>.
func (p *writer) when(t *metav1.Time) string {
	if t == nil || t.IsZero() {
		return "<none>"
	}
	return HumanDuration(p.now.Sub(t.Time)) + " ago (" + t.Time.Format(time.RFC1123Z) + ")"
}

// sourceSummary lists a function's files with their sizes.
func sourceSummary(src map[string]string) string {
	if len(src) == 0 {
		return "<none>"
	}
	names := make([]string, 0, len(src))
	total := 0
	for n, body := range src {
		names = append(names, n)
		total += len(body)
	}
	sort.Strings(names)
	const shown = 8
	parts := make([]string, 0, shown+1)
	for i, n := range names {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-shown))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", n, byteSize(len(src[n]))))
	}
	files := "files"
	if len(names) == 1 {
		files = "file"
	}
	return fmt.Sprintf("%d %s, %s: %s", len(names), files, byteSize(total), strings.Join(parts, ", "))
}

// requirementsSummary is the requirement lines without comments and blank lines.
func requirementsSummary(reqs string) []string {
	var out []string
	for _, l := range strings.Split(reqs, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func byteSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func int32Or(v *int32, d string) string {
	if v == nil {
		return d
	}
	return fmt.Sprint(*v)
}

func secondsOr(v *int32, d string) string {
	if v == nil {
		return d
	}
	return fmt.Sprintf("%ds", *v)
}

// shortHash is the first 12 characters of a hash, as image IDs are shown.
func shortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// oneLine keeps a value on its row: newlines and tabs become spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
