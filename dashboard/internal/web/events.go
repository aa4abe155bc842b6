package web

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxEvents is how many of the latest events the events page lists.
const maxEvents = 200

type eventRow struct {
	Namespace, Type, Reason, Object, Message, Source string
	Count                                            int32
	Last                                             time.Time
	Age                                              time.Duration
}

type eventsData struct {
	Events []eventRow
	Total  int
	Type   string
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callCtx(r)
	defer cancel()
	p := &page{}
	d := eventsData{Type: r.URL.Query().Get("type")}
	l, err := s.cfg.Kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		p.fail("list events", err)
		l = &corev1.EventList{}
	}
	for _, e := range l.Items {
		if d.Type != "" && e.Type != d.Type {
			continue
		}
		last := e.LastTimestamp.Time
		if last.IsZero() {
			last = e.EventTime.Time
		}
		if last.IsZero() {
			last = e.CreationTimestamp.Time
		}
		count := e.Count
		if count == 0 {
			count = 1
		}
		d.Events = append(d.Events, eventRow{
			Namespace: e.Namespace, Type: e.Type, Reason: e.Reason, Message: e.Message,
			Object: kindName(e.InvolvedObject), Source: cmp.Or(e.Source.Component, e.ReportingController),
			Count: count, Last: last, Age: s.cfg.Now().Sub(last),
		})
	}
	slices.SortStableFunc(d.Events, func(a, b eventRow) int { return b.Last.Compare(a.Last) })
	d.Total = len(d.Events)
	if len(d.Events) > maxEvents {
		d.Events = d.Events[:maxEvents]
	}
	p.Data = d
	s.render(w, "events", p)
}

func kindName(o corev1.ObjectReference) string {
	if o.Kind == "" {
		return o.Name
	}
	return o.Kind + "/" + o.Name
}
