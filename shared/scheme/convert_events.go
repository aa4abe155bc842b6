package scheme

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/conversion"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// events.k8s.io/v1 Events are core/v1 Events under other names: note is message, regarding is
// involvedObject, and the fields the older API kept as its own (source, first and last
// timestamps, count) are the deprecated* ones. Nothing is lost either way.
func init() {
	utilruntime.Must(Scheme.AddConversionFunc((*corev1.Event)(nil), (*eventsv1.Event)(nil),
		func(a, b any, _ conversion.Scope) error {
			eventToEventsV1(a.(*corev1.Event), b.(*eventsv1.Event))
			return nil
		}))
	utilruntime.Must(Scheme.AddConversionFunc((*eventsv1.Event)(nil), (*corev1.Event)(nil),
		func(a, b any, _ conversion.Scope) error {
			eventToCoreV1(a.(*eventsv1.Event), b.(*corev1.Event))
			return nil
		}))
	utilruntime.Must(Scheme.AddFieldLabelConversionFunc(eventsv1.SchemeGroupVersion.WithKind("Event"), eventsV1FieldLabel))
}

func eventToEventsV1(in *corev1.Event, out *eventsv1.Event) {
	in = in.DeepCopy()
	out.ObjectMeta = in.ObjectMeta
	out.EventTime = in.EventTime
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
	out.Action = in.Action
	out.Reason = in.Reason
	out.Regarding = in.InvolvedObject
	out.Related = in.Related
	out.Note = in.Message
	out.Type = in.Type
	out.DeprecatedSource = in.Source
	out.DeprecatedFirstTimestamp = in.FirstTimestamp
	out.DeprecatedLastTimestamp = in.LastTimestamp
	out.DeprecatedCount = in.Count
}

func eventToCoreV1(in *eventsv1.Event, out *corev1.Event) {
	in = in.DeepCopy()
	out.ObjectMeta = in.ObjectMeta
	out.InvolvedObject = in.Regarding
	out.Reason = in.Reason
	out.Message = in.Note
	out.Source = in.DeprecatedSource
	out.FirstTimestamp = in.DeprecatedFirstTimestamp
	out.LastTimestamp = in.DeprecatedLastTimestamp
	out.Count = in.DeprecatedCount
	out.Type = in.Type
	out.EventTime = in.EventTime
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	out.Action = in.Action
	out.Related = in.Related
	out.ReportingController = in.ReportingController
	out.ReportingInstance = in.ReportingInstance
}

// eventsV1Fields maps what an events.k8s.io/v1 field selector may name to the core/v1 Event's
// field of the same meaning, as Kubernetes converts them.
var eventsV1Fields = map[string]string{
	"metadata.name":             "metadata.name",
	"metadata.namespace":        "metadata.namespace",
	"reason":                    "reason",
	"regarding.kind":            "involvedObject.kind",
	"regarding.namespace":       "involvedObject.namespace",
	"regarding.name":            "involvedObject.name",
	"regarding.uid":             "involvedObject.uid",
	"regarding.apiVersion":      "involvedObject.apiVersion",
	"regarding.resourceVersion": "involvedObject.resourceVersion",
	"regarding.fieldPath":       "involvedObject.fieldPath",
	"reportingController":       "reportingComponent",
	"source":                    "source",
	"type":                      "type",
}

func eventsV1FieldLabel(label, value string) (string, string, error) {
	core, ok := eventsV1Fields[label]
	if !ok {
		return "", "", fmt.Errorf("field label not supported: %s", label)
	}
	return core, value, nil
}
