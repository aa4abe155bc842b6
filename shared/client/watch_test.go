package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// waitLimit is generous: these tests wait on conditions, never on timing.
const waitLimit = 30 * time.Second

func TestWatchDecoding(t *testing.T) {
	stream := `{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"1"}}}
{"type":"MODIFIED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"2"}}}
{"type":"BOOKMARK","object":{"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"3"}}}
{"type":"DELETED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","resourceVersion":"4"}}}
{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}
`
	f, c := newFake(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, stream)
	})
	w, err := For[*corev1.Pod, *corev1.PodList](c, res(t, "pods")).Watch(t.Context(), "default", metav1.ListOptions{ResourceVersion: "1", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() { // the channel closes when the server ends the stream
		switch o := ev.Object.(type) {
		case *corev1.Pod:
			got = append(got, fmt.Sprintf("%s %s rv=%s", ev.Type, o.Name, o.ResourceVersion))
		case *metav1.Status:
			got = append(got, fmt.Sprintf("%s %s %d", ev.Type, o.Reason, o.Code))
		default:
			t.Fatalf("event object %T", o)
		}
	}
	want := []string{"ADDED a rv=1", "MODIFIED a rv=2", "BOOKMARK  rv=3", "DELETED a rv=4", "ERROR Expired 410"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if q := f.last(t).Query; q != "allowWatchBookmarks=true&resourceVersion=1&watch=true" {
		t.Errorf("query = %q", q)
	}
}

func TestWatchEnds(t *testing.T) {
	// The server sends one event and then holds the stream open until the client leaves.
	hold := func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}}`+"\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
	tests := []struct {
		name string
		end  func(w watch.Interface, cancel context.CancelFunc)
	}{
		{"Stop", func(w watch.Interface, _ context.CancelFunc) { w.Stop() }},
		{"context cancelled", func(_ watch.Interface, cancel context.CancelFunc) { cancel() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := newFake(t, hold)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			w, err := For[*corev1.Pod, *corev1.PodList](c, res(t, "pods")).Watch(ctx, "default", metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Added {
					t.Fatalf("first event %v", ev.Type)
				}
			case <-time.After(waitLimit):
				t.Fatal("no first event")
			}
			tt.end(w, cancel)
			select {
			case ev, ok := <-w.ResultChan():
				if ok {
					t.Fatalf("got %v after the end, want a closed channel", ev.Type)
				}
			case <-time.After(waitLimit):
				t.Fatal("result channel not closed after the watch ended")
			}
			w.Stop() // a second Stop must be harmless
		})
	}
}

func TestWatchGarbage(t *testing.T) {
	_, c := newFake(t, reply(200, "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}\nnot json\n"))
	w, err := For[*corev1.Pod, *corev1.PodList](c, res(t, "pods")).Watch(t.Context(), "default", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var types []watch.EventType
	for ev := range w.ResultChan() {
		types = append(types, ev.Type)
	}
	if diff := cmp.Diff([]watch.EventType{watch.Added, watch.Error}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestWatchTable(t *testing.T) {
	f, c := newFake(t, reply(200, `{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[{"name":"Name","type":"string"}],"rows":[{"cells":["web"]}]}}`+"\n"))
	w, err := c.WatchTable(t.Context(), res(t, "pods"), "default", metav1.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	var rows []any
	for ev := range w.ResultChan() {
		tbl, ok := ev.Object.(*metav1.Table)
		if !ok {
			t.Fatalf("event object %T, want *metav1.Table", ev.Object)
		}
		for _, r := range tbl.Rows {
			rows = append(rows, r.Cells...)
		}
	}
	if diff := cmp.Diff([]any{"web"}, rows); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
	if r := f.last(t); r.Accept != TableAccept || r.Query != "fieldSelector=metadata.name%3Dweb&watch=true" {
		t.Errorf("request = %+v", r)
	}
}
