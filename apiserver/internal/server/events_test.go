package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Events are stored as core/v1 Events and served as events.k8s.io/v1 too, with that API's
// names, field selectors and stricter rules for its own writes.
func TestEventsServedInTwoVersions(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	corePath := "/api/v1/namespaces/" + ns + "/events"
	newPath := "/apis/events.k8s.io/v1/namespaces/" + ns + "/events"
	watch := h.openWatch(newPath + "?watch=true")
	now := metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))

	t.Run("events.k8s.io create reads as core", func(t *testing.T) {
		var created eventsv1.Event
		h.mustDo(http.StatusCreated, "POST", newPath, "", &eventsv1.Event{
			TypeMeta:            metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
			ObjectMeta:          metav1.ObjectMeta{Name: "web.new"},
			EventTime:           now,
			ReportingController: "example.com/reconciler", ReportingInstance: "reconciler-0",
			Action: "Reconciling", Reason: "Synced", Type: corev1.EventTypeNormal, Note: "synced web",
			Regarding: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: "web"},
		}, &created)
		if created.APIVersion != "events.k8s.io/v1" || created.Note != "synced web" || created.Regarding.Name != "web" {
			t.Fatalf("created %s note %q regarding %+v", created.APIVersion, created.Note, created.Regarding)
		}
		var core corev1.Event
		h.mustDo(http.StatusOK, "GET", corePath+"/web.new", "", nil, &core)
		if core.APIVersion != "v1" || core.Message != "synced web" || core.InvolvedObject.Kind != "Deployment" ||
			core.ReportingController != "example.com/reconciler" || core.Action != "Reconciling" || !core.EventTime.Equal(&now) {
			t.Fatalf("core view %+v", core)
		}
		if core.UID != created.UID || core.ResourceVersion != created.ResourceVersion {
			t.Fatalf("core view is another object: %s/%s vs %s/%s", core.UID, core.ResourceVersion, created.UID, created.ResourceVersion)
		}
	})

	t.Run("core create reads as events.k8s.io", func(t *testing.T) {
		h.mustDo(http.StatusCreated, "POST", corePath, "", &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web.old"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-1"},
			Reason:         "Pulled", Message: "pulled the image", Type: corev1.EventTypeNormal, Count: 3,
			Source:         corev1.EventSource{Component: "kubelet", Host: "n1"},
			FirstTimestamp: metav1.Unix(100, 0), LastTimestamp: metav1.Unix(200, 0),
		}, nil)
		var ev eventsv1.Event
		h.mustDo(http.StatusOK, "GET", newPath+"/web.old", "", nil, &ev)
		if ev.Note != "pulled the image" || ev.Regarding.Name != "web-1" || ev.DeprecatedCount != 3 ||
			ev.DeprecatedSource.Host != "n1" || ev.DeprecatedLastTimestamp.Unix() != 200 {
			t.Fatalf("events.k8s.io view %+v", ev)
		}
		var list eventsv1.EventList
		h.mustDo(http.StatusOK, "GET", newPath, "", nil, &list)
		if list.APIVersion != "events.k8s.io/v1" || list.Kind != "EventList" || len(list.Items) != 2 {
			t.Fatalf("list %s %s of %d", list.APIVersion, list.Kind, len(list.Items))
		}
	})

	t.Run("watch in events.k8s.io", func(t *testing.T) {
		seen := map[string]string{}
		for len(seen) < 2 {
			raw := next(t, watch, true)
			var ev eventsv1.Event
			if err := decodeJSON(raw.Object, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.APIVersion != "events.k8s.io/v1" {
				t.Fatalf("%s event in %s: %s", raw.Type, ev.APIVersion, raw.Object)
			}
			seen[ev.Name] = ev.Note
		}
		if seen["web.new"] != "synced web" || seen["web.old"] != "pulled the image" {
			t.Fatalf("watched %v", seen)
		}
	})

	t.Run("field selectors name the served fields", func(t *testing.T) {
		var list eventsv1.EventList
		h.mustDo(http.StatusOK, "GET", newPath+"?fieldSelector=regarding.name%3Dweb-1", "", nil, &list)
		if len(list.Items) != 1 || list.Items[0].Name != "web.old" {
			t.Fatalf("regarding.name=web-1 selected %d items", len(list.Items))
		}
		h.mustDo(http.StatusOK, "GET", newPath+"?fieldSelector=reportingController%3Dexample.com/reconciler", "", nil, &list)
		if len(list.Items) != 1 || list.Items[0].Name != "web.new" {
			t.Fatalf("reportingController selected %d items", len(list.Items))
		}
		var st metav1.Status
		code, _ := h.do("GET", newPath+"?fieldSelector=involvedObject.name%3Dweb-1", "", nil, &st)
		if code != http.StatusBadRequest || !strings.Contains(st.Message, "field label not supported: involvedObject.name") {
			t.Fatalf("core field on events.k8s.io: %d %s", code, st.Message)
		}
		var core corev1.EventList
		h.mustDo(http.StatusOK, "GET", corePath+"?fieldSelector=involvedObject.name%3Dweb-1", "", nil, &core)
		if len(core.Items) != 1 {
			t.Fatalf("core selector selected %d items", len(core.Items))
		}
	})

	t.Run("events.k8s.io writes answer to its rules", func(t *testing.T) {
		var st metav1.Status
		code, _ := h.do("POST", newPath, "", map[string]any{
			"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": "bad"},
			"regarding": map[string]any{"kind": "Pod", "namespace": ns, "name": "web-1"}, "reason": "Synced", "type": "Normal", "deprecatedCount": 2,
		}, &st)
		if code != http.StatusUnprocessableEntity {
			t.Fatalf("create without eventTime: %d %s", code, st.Message)
		}
		for _, want := range []string{"eventTime: Required value", `count: Invalid value: "": needs to be unset`} {
			if !strings.Contains(st.Message, want) {
				t.Errorf("%q lacks %q", st.Message, want)
			}
		}
		if code, _ := h.do("GET", corePath+"/bad", "", nil, nil); code != http.StatusNotFound {
			t.Fatalf("the bad event was written: %d", code)
		}
		// The same event through core/v1 is fine: old clients write such events.
		h.mustDo(http.StatusCreated, "POST", corePath, "", map[string]any{
			"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "bad"},
			"involvedObject": map[string]any{"kind": "Pod", "namespace": ns, "name": "web-1"}, "reason": "Synced", "type": "Normal", "count": 2,
		}, nil)

		code, _ = h.do("PATCH", newPath+"/web.new", "application/merge-patch+json", `{"note":"changed"}`, &st)
		if code != http.StatusUnprocessableEntity || !strings.Contains(st.Message, "message: Invalid value") {
			t.Fatalf("note changed through events.k8s.io: %d %s", code, st.Message)
		}
		later := metav1.NewMicroTime(now.Add(time.Minute))
		var ev eventsv1.Event
		h.mustDo(http.StatusOK, "PATCH", newPath+"/web.new", "application/merge-patch+json",
			map[string]any{"series": map[string]any{"count": 2, "lastObservedTime": later}}, &ev)
		if ev.Series == nil || ev.Series.Count != 2 {
			t.Fatalf("series after the patch: %+v", ev.Series)
		}
		// core/v1 keeps its looser rules for the same object.
		h.mustDo(http.StatusOK, "PATCH", corePath+"/web.new", "application/merge-patch+json", `{"message":"changed"}`, nil)
	})

	t.Run("discovery and tables", func(t *testing.T) {
		var g metav1.APIGroup
		h.mustDo(http.StatusOK, "GET", "/apis/events.k8s.io", "", nil, &g)
		if len(g.Versions) != 1 || g.PreferredVersion.GroupVersion != "events.k8s.io/v1" {
			t.Fatalf("events.k8s.io group %+v", g)
		}
		var rl metav1.APIResourceList
		h.mustDo(http.StatusOK, "GET", "/apis/events.k8s.io/v1", "", nil, &rl)
		if len(rl.APIResources) != 1 || rl.APIResources[0].Name != "events" || rl.APIResources[0].Kind != "Event" ||
			!rl.APIResources[0].Namespaced || strings.Join(rl.APIResources[0].ShortNames, ",") != "ev" {
			t.Fatalf("events.k8s.io/v1 resources %+v", rl.APIResources)
		}
		var tbl metav1.Table
		code, _ := h.do("GET", newPath, "", nil, &tbl, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if code != http.StatusOK || len(tbl.Rows) != 3 {
			t.Fatalf("table %d with %d rows", code, len(tbl.Rows))
		}
		var core metav1.Table
		h.do("GET", corePath, "", nil, &core, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		if len(tbl.ColumnDefinitions) != len(core.ColumnDefinitions) || tbl.ColumnDefinitions[2].Name != core.ColumnDefinitions[2].Name {
			t.Fatalf("events.k8s.io columns %+v, core %+v", tbl.ColumnDefinitions, core.ColumnDefinitions)
		}
	})
}
