package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type rawEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// openWatch starts a watch and returns a channel of its events.
func (h *harness) openWatch(path string) <-chan rawEvent {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		h.t.Fatalf("watch %s: %d", path, resp.StatusCode)
	}
	out := make(chan rawEvent, 100)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev rawEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				out <- ev
			}
		}
	}()
	h.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return out
}

func next(t *testing.T, ch <-chan rawEvent, skipBookmarks bool) rawEvent {
	t.Helper()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("watch ended")
			}
			if skipBookmarks && ev.Type == "BOOKMARK" {
				continue
			}
			return ev
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event within 30s")
		}
	}
}

func podName(t *testing.T, ev rawEvent) string {
	var p corev1.Pod
	if err := json.Unmarshal(ev.Object, &p); err != nil {
		t.Fatal(err)
	}
	return p.Name
}

func TestWatchFromResourceVersionWithSelectors(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/pods"
	var first corev1.Pod
	h.mustDo(http.StatusCreated, "POST", base, "", podManifest("before", map[string]string{"w": "yes"}), &first)

	// Without resourceVersion the watch starts with the current state.
	all := h.openWatch(base + "?watch=true")
	if ev := next(t, all, true); ev.Type != "ADDED" || podName(t, ev) != "before" {
		t.Fatalf("initial event %s %s", ev.Type, ev.Object)
	}
	sel := h.openWatch(base + "?watch=1&labelSelector=w%3Dyes&resourceVersion=" + first.ResourceVersion)

	h.mustDo(http.StatusCreated, "POST", base, "", podManifest("other", map[string]string{"w": "no"}), nil)
	h.mustDo(http.StatusOK, "PATCH", base+"/before", "application/merge-patch+json", `{"metadata":{"labels":{"w":"no"}}}`, nil)
	h.mustDo(http.StatusOK, "PATCH", base+"/other", "application/merge-patch+json", `{"metadata":{"labels":{"w":"yes"}}}`, nil)
	h.mustDo(http.StatusOK, "DELETE", base+"/other", "", nil, nil)

	want := []struct{ typ, name string }{{"ADDED", "other"}, {"MODIFIED", "before"}, {"MODIFIED", "other"}, {"DELETED", "other"}}
	for _, w := range want {
		if ev := next(t, all, true); ev.Type != w.typ || podName(t, ev) != w.name {
			t.Fatalf("unfiltered watch: got %s %s, want %s %s", ev.Type, podName(t, ev), w.typ, w.name)
		}
	}
	// Through the selector: "before" leaves it (DELETED), "other" enters (ADDED) then goes.
	wantSel := []struct{ typ, name string }{{"DELETED", "before"}, {"ADDED", "other"}, {"DELETED", "other"}}
	for _, w := range wantSel {
		if ev := next(t, sel, true); ev.Type != w.typ || podName(t, ev) != w.name {
			t.Fatalf("selector watch: got %s %s, want %s %s", ev.Type, podName(t, ev), w.typ, w.name)
		}
	}
}

func TestWatchBookmarksAndTables(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/pods"
	rev, err := testStore.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bm := h.openWatch(base + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + strconv.FormatInt(rev, 10))
	if ev := next(t, bm, false); ev.Type != "BOOKMARK" {
		// Nothing changes in this fresh namespace, so the first event is a bookmark.
		t.Fatalf("expected a bookmark, got %s %s", ev.Type, ev.Object)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+base+"?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h.mustDo(http.StatusCreated, "POST", base, "", podManifest("tbl", nil), nil)
	dec := json.NewDecoder(resp.Body)
	var ev struct {
		Type   string       `json:"type"`
		Object metav1.Table `json:"object"`
	}
	if err := dec.Decode(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ADDED" || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || ev.Object.Rows[0].Cells[0] != "tbl" {
		t.Fatalf("table watch event %+v", ev)
	}
}

func TestWatchCompactedIsGone(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	var cm corev1.ConfigMap
	h.mustDo(http.StatusCreated, "POST", base, "", map[string]any{"metadata": map[string]any{"name": "c"}}, &cm)
	h.mustDo(http.StatusOK, "PATCH", base+"/c", "application/merge-patch+json", `{"data":{"x":"1"}}`, nil)
	rev, err := testStore.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := testStore.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	old, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	w := h.openWatch(base + "?watch=true&resourceVersion=" + strconv.FormatInt(old-1, 10))
	ev := next(t, w, true)
	var st metav1.Status
	if err := json.Unmarshal(ev.Object, &st); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ERROR" || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("compacted watch: %s %+v", ev.Type, st)
	}
}

// A watch ends as the server begins to shut down (StopWatches), instead of holding the
// shutdown for its whole drain period.
func TestWatchesEndAtShutdown(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	w := h.openWatch(base + "?watch=true")
	h.mustDo(http.StatusCreated, "POST", base, "", map[string]any{"metadata": map[string]any{"name": "before"}}, nil)
	if ev := next(t, w, true); ev.Type != "ADDED" {
		t.Fatalf("first event %s, want ADDED", ev.Type)
	}
	h.srv.StopWatches()
	h.srv.StopWatches() // twice is harmless
	ended := func(ch <-chan rawEvent) bool {
		deadline := time.After(30 * time.Second)
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	if !ended(w) {
		t.Fatal("the watch went on after StopWatches")
	}
	// One asked for afterwards (only a kept-alive connection can, as the listener is closed
	// by then) is refused with 503 at once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.url+base+"?watch=true", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a watch after StopWatches: %d, want 503", resp.StatusCode)
	}
	// Other requests are still served: they drain.
	h.mustDo(http.StatusOK, "GET", base, "", nil, nil)
}
