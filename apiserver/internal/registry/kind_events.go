package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"minik8s.io/apiserver/internal/tables"
	"minik8s.io/apiserver/internal/validation"
	"minik8s.io/shared/scheme"
)

// Events are selectable by what they are about. They are served as events.k8s.io/v1 too,
// whose writes answer to that API's stricter rules.
var _ = register(Kind[*corev1.Event]{
	Resource:   served("events"),
	Validation: validation.Event,
	VersionValidation: func(_ *scheme.Resource, ev, old *corev1.Event) field.ErrorList {
		return validation.EventsV1(ev, old)
	},
	Fields: eventFields,
	Table:  tables.Event,
})

func eventFields(ev *corev1.Event) fields.Set {
	return fields.Set{
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         ev.Source.Component,
		"type":                           ev.Type,
	}
}
