package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A core/v1 Event as old clients (and shared/record) write it: no eventTime.
func legacyEvent() *corev1.Event {
	return &corev1.Event{ObjectMeta: meta("web.1"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"},
		Reason: "Pulled", Message: "pulled", Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: metav1.Unix(10, 0), LastTimestamp: metav1.Unix(10, 0), Source: corev1.EventSource{Component: "kubelet"}}
}

// An Event as an events.k8s.io/v1 client writes it, in its stored core/v1 form.
func newerEvent() *corev1.Event {
	return &corev1.Event{ObjectMeta: meta("web.2"), InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "web", Namespace: "default"},
		EventTime: metav1.NewMicroTime(metav1.Unix(10, 0).Time), Type: corev1.EventTypeWarning, Reason: "BackOff", Action: "Restarting",
		Message: "back-off", ReportingController: "example.com/ctl", ReportingInstance: "ctl-1"}
}

func TestEvent(t *testing.T) {
	runCreate(t, Event, nil, legacyEvent, []createCase[*corev1.Event]{
		{name: "valid"},
		{name: "about nothing", mutate: func(e *corev1.Event) { e.InvolvedObject = corev1.ObjectReference{} }},
		{name: "namespace mismatch", mutate: func(e *corev1.Event) { e.InvolvedObject.Namespace = "other" }, want: []problem{inv("involvedObject.namespace")}},
		{name: "cluster-scoped object outside default", mutate: func(e *corev1.Event) {
			e.Namespace, e.InvolvedObject = "kube-system", corev1.ObjectReference{Kind: "Node", Name: "n1"}
		}, want: []problem{inv("involvedObject.namespace")}},
		{name: "negative count", mutate: func(e *corev1.Event) { e.Count = -1 }, want: []problem{inv("count")}},
		{name: "long message without eventTime", mutate: func(e *corev1.Event) { e.Message = strings.Repeat("x", 2000) }},
	})
	// Once an Event has an eventTime it must say who reported what, whichever API wrote it.
	runCreate(t, Event, nil, newerEvent, []createCase[*corev1.Event]{
		{name: "valid"},
		{name: "cluster-scoped object in kube-system", mutate: func(e *corev1.Event) {
			e.Namespace, e.InvolvedObject = "kube-system", corev1.ObjectReference{Kind: "Node", Name: "n1"}
		}},
		{name: "reporter, action and reason required", mutate: func(e *corev1.Event) {
			e.ReportingController, e.ReportingInstance, e.Action, e.Reason = "", "", "", ""
		}, // The empty controller is not a qualified name either, twice over, as Kubernetes reports it.
			want: []problem{req("reportingController"), inv("reportingController"), inv("reportingController"), req("reportingInstance"), req("action"), req("reason")}},
		{name: "controller is a qualified name", mutate: func(e *corev1.Event) { e.ReportingController = "not a name" }, want: []problem{inv("reportingController")}},
		{name: "lengths", mutate: func(e *corev1.Event) {
			e.ReportingInstance, e.Action, e.Reason, e.Message = strings.Repeat("i", 129), strings.Repeat("a", 129), strings.Repeat("r", 129), strings.Repeat("n", 1025)
		}, want: []problem{inv("reportingInstance"), inv("action"), inv("reason"), inv("message")}},
	})
}

func TestEventsV1(t *testing.T) {
	create := []struct {
		name   string
		mutate func(*corev1.Event)
		want   []problem
	}{
		{name: "valid"},
		{name: "series of two", mutate: func(e *corev1.Event) {
			e.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(metav1.Unix(20, 0).Time)}
		}},
		{name: "series too short and without time", mutate: func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1} },
			want: []problem{inv("series.count"), req("series.lastObservedTime")}},
		{name: "eventTime required", mutate: func(e *corev1.Event) { e.EventTime = metav1.MicroTime{} }, want: []problem{req("eventTime")}},
		{name: "type", mutate: func(e *corev1.Event) { e.Type = "Fatal" }, want: []problem{inv("type")}},
		{name: "deprecated fields unset", mutate: func(e *corev1.Event) {
			e.FirstTimestamp, e.LastTimestamp, e.Count, e.Source = metav1.Unix(1, 0), metav1.Unix(2, 0), 3, corev1.EventSource{Host: "n1"}
		}, want: []problem{inv("firstTimestamp"), inv("lastTimestamp"), inv("count"), inv("source")}},
	}
	for _, tc := range create {
		t.Run("create "+tc.name, func(t *testing.T) {
			e := newerEvent()
			if tc.mutate != nil {
				tc.mutate(e)
			}
			check(t, EventsV1(e, nil), tc.want)
		})
	}
	update := []struct {
		name   string
		mutate func(*corev1.Event)
		want   []problem
	}{
		{name: "series grows", mutate: func(e *corev1.Event) {
			e.Series = &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(metav1.Unix(20, 0).Time)}
		}},
		{name: "bad series", mutate: func(e *corev1.Event) { e.Series = &corev1.EventSeries{Count: 1} },
			want: []problem{inv("series.count"), req("series.lastObservedTime")}},
		{name: "labels may change", mutate: func(e *corev1.Event) { e.Labels = map[string]string{"a": "b"} }},
		{name: "what happened may not", mutate: func(e *corev1.Event) {
			e.Message, e.Reason, e.Action, e.Type = "other", "Other", "Other", corev1.EventTypeNormal
			e.InvolvedObject.Name, e.ReportingController, e.ReportingInstance = "db", "example.com/other", "ctl-2"
			e.EventTime, e.Related = metav1.NewMicroTime(metav1.Unix(30, 0).Time), &corev1.ObjectReference{Kind: "Node", Name: "n1"}
		}, want: []problem{inv("involvedObject"), inv("reason"), inv("message"), inv("type"), inv("eventTime"), inv("action"),
			inv("related"), inv("reportingController"), inv("reportingInstance")}},
		{name: "nor the deprecated fields", mutate: func(e *corev1.Event) {
			e.FirstTimestamp, e.LastTimestamp, e.Count, e.Source = metav1.Unix(1, 0), metav1.Unix(2, 0), 3, corev1.EventSource{Host: "n1"}
		}, want: []problem{inv("source"), inv("firstTimestamp"), inv("lastTimestamp"), inv("count")}},
	}
	for _, tc := range update {
		t.Run("update "+tc.name, func(t *testing.T) {
			old := newerEvent()
			e := old.DeepCopy()
			tc.mutate(e)
			check(t, EventsV1(e, old), tc.want)
		})
	}
	// The messages are Kubernetes' own.
	e := newerEvent()
	e.Type, e.Count = "Fatal", 2
	got := EventsV1(e, nil).ToAggregate().Error()
	for _, want := range []string{`type: Invalid value: "": has invalid value: Fatal`, `count: Invalid value: "": needs to be unset`} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}
