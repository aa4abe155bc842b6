package validation

import (
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits on an Event's fields once it has an eventTime, as Kubernetes sets them.
const (
	eventReportingInstanceLimit = 128
	eventActionLimit            = 128
	eventReasonLimit            = 128
	eventNoteLimit              = 1024
)

// Event is how Events are validated, whichever API version writes them. An event with an
// eventTime is one of the newer kind and must say who reported it and what happened; one
// without is held only to its namespace, so old clients keep working.
var Event = Rules[*corev1.Event]{Name: dnsSubdomain, Spec: validateEvent}

func validateEvent(e *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	ns := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		// An event about a cluster-scoped object lives in default (or nowhere, for old clients).
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(ns, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(ns, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(ns, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		rc := field.NewPath("reportingController")
		if e.ReportingController == "" {
			allErrs = append(allErrs, field.Required(rc, ""))
		}
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			allErrs = append(allErrs, field.Invalid(rc, e.ReportingController, msg))
		}
		allErrs = append(allErrs, requiredAtMost(field.NewPath("reportingInstance"), e.ReportingInstance, eventReportingInstanceLimit)...)
		allErrs = append(allErrs, requiredAtMost(field.NewPath("action"), e.Action, eventActionLimit)...)
		allErrs = append(allErrs, requiredAtMost(field.NewPath("reason"), e.Reason, eventReasonLimit)...)
		if len(e.Message) > eventNoteLimit {
			allErrs = append(allErrs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %d characters", eventNoteLimit)))
		}
	}
	if e.Count < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), e.Count, "must be greater than or equal to 0"))
	}
	return allErrs
}

// requiredAtMost is a field that must be set and at most limit characters long.
func requiredAtMost(p *field.Path, v string, limit int) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if len(v) > limit {
		return field.ErrorList{field.Invalid(p, "", fmt.Sprintf("can have at most %d characters", limit))}
	}
	return nil
}

// EventsV1 is what an Event written through events.k8s.io/v1 must satisfy besides Event, as
// Kubernetes checks it: an eventTime, a type of Normal or Warning, a series of two or more,
// none of the deprecated core fields on create, and on update nothing changed but the series
// and metadata. Paths name the core fields the checks are about, as Kubernetes reports them.
func EventsV1(e, old *corev1.Event) field.ErrorList {
	if old == nil {
		return eventsV1Create(e)
	}
	var allErrs field.ErrorList
	if !reflect.DeepEqual(e.Series, old.Series) {
		allErrs = append(allErrs, eventSeries(e)...)
	}
	for _, f := range []struct {
		name     string
		new, old any
	}{
		{"involvedObject", e.InvolvedObject, old.InvolvedObject},
		{"reason", e.Reason, old.Reason},
		{"message", e.Message, old.Message},
		{"source", e.Source, old.Source},
		{"firstTimestamp", e.FirstTimestamp, old.FirstTimestamp},
		{"lastTimestamp", e.LastTimestamp, old.LastTimestamp},
		{"count", e.Count, old.Count},
		{"type", e.Type, old.Type},
		{"eventTime", e.EventTime, old.EventTime},
		{"action", e.Action, old.Action},
		{"related", e.Related, old.Related},
		{"reportingController", e.ReportingController, old.ReportingController},
		{"reportingInstance", e.ReportingInstance, old.ReportingInstance},
	} {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
	}
	return allErrs
}

func eventsV1Create(e *corev1.Event) field.ErrorList {
	allErrs := eventSeries(e)
	if e.EventTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	if !e.FirstTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !e.LastTimestamp.IsZero() {
		allErrs = append(allErrs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if e.Count != 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if e.Source.Component != "" || e.Source.Host != "" {
		allErrs = append(allErrs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return allErrs
}

func eventSeries(e *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	if e.Series == nil {
		return nil
	}
	if e.Series.Count < 2 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("series", "count"), "", "should be at least 2"))
	}
	if e.Series.LastObservedTime.IsZero() {
		allErrs = append(allErrs, field.Required(field.NewPath("series", "lastObservedTime"), ""))
	}
	return allErrs
}
