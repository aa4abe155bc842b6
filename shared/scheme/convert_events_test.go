package scheme

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/randfill"
)

func eventsResource(t *testing.T, group string) *Resource {
	t.Helper()
	r, ok := ByGVR(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "events"})
	if !ok {
		t.Fatalf("%s/v1 events not served", group)
	}
	return r
}

// Every field of either version survives a trip through the other, whatever it holds.
func TestEventConversionRoundTrip(t *testing.T) {
	core, events := eventsResource(t, ""), eventsResource(t, "events.k8s.io")
	if events.Stored() != core {
		t.Fatal("events.k8s.io/v1 events are not stored as core/v1 events")
	}
	f := randfill.NewWithSeed(21).NilChance(0.2).Funcs(
		// Times travel at the precision their JSON keeps.
		func(tm *metav1.Time, c randfill.Continue) { *tm = metav1.Unix(c.Int63n(1<<32), 0) },
		func(tm *metav1.MicroTime, c randfill.Continue) {
			*tm = metav1.NewMicroTime(metav1.Unix(c.Int63n(1<<32), c.Int63n(1e9)).Time)
		},
		func(tm *metav1.TypeMeta, _ randfill.Continue) {},
	)
	for i := range 200 {
		var in corev1.Event
		f.Fill(&in)
		mid, err := Convert(&in, events)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Convert(mid, core)
		if err != nil {
			t.Fatal(err)
		}
		back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if !equality.Semantic.DeepEqual(&in, back) {
			t.Fatalf("core event %d changed through events.k8s.io/v1:\n%s", i, cmp.Diff(&in, back))
		}

		var ev eventsv1.Event
		f.Fill(&ev)
		mid, err = Convert(&ev, core)
		if err != nil {
			t.Fatal(err)
		}
		back, err = Convert(mid, events)
		if err != nil {
			t.Fatal(err)
		}
		back.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		if !equality.Semantic.DeepEqual(&ev, back) {
			t.Fatalf("events.k8s.io event %d changed through core/v1:\n%s", i, cmp.Diff(&ev, back))
		}
	}
}

// The renamed fields land where Kubernetes puts them.
func TestEventConversionNames(t *testing.T) {
	ev := &eventsv1.Event{
		ObjectMeta:               metav1.ObjectMeta{Name: "x", Namespace: "ns"},
		Note:                     "pulled",
		Regarding:                corev1.ObjectReference{Kind: "Pod", Name: "web"},
		ReportingController:      "example.com/ctl",
		ReportingInstance:        "ctl-1",
		DeprecatedSource:         corev1.EventSource{Component: "kubelet", Host: "n1"},
		DeprecatedCount:          3,
		DeprecatedFirstTimestamp: metav1.Unix(10, 0),
		DeprecatedLastTimestamp:  metav1.Unix(20, 0),
		Series:                   &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(metav1.Unix(30, 0).Time)},
	}
	out, err := Convert(ev, eventsResource(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Event)
	want := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          ev.ObjectMeta,
		Message:             "pulled",
		InvolvedObject:      ev.Regarding,
		ReportingController: "example.com/ctl",
		ReportingInstance:   "ctl-1",
		Source:              ev.DeprecatedSource,
		Count:               3,
		FirstTimestamp:      ev.DeprecatedFirstTimestamp,
		LastTimestamp:       ev.DeprecatedLastTimestamp,
		Series:              &corev1.EventSeries{Count: 4, LastObservedTime: ev.Series.LastObservedTime},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("core event (-want +got):\n%s", diff)
	}
}

// Field selectors on events.k8s.io/v1 name its fields and select on the stored core ones.
func TestEventsV1FieldLabels(t *testing.T) {
	gvk := eventsv1.SchemeGroupVersion.WithKind("Event")
	for in, want := range map[string]string{
		"regarding.name": "involvedObject.name", "regarding.kind": "involvedObject.kind",
		"reportingController": "reportingComponent", "reason": "reason", "metadata.name": "metadata.name",
	} {
		got, _, err := Scheme.ConvertFieldLabel(gvk, in, "v")
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"involvedObject.name", "note", "reportingComponent"} {
		if _, _, err := Scheme.ConvertFieldLabel(gvk, bad, "v"); err == nil || err.Error() != "field label not supported: "+bad {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
