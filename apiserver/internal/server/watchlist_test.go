package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const watchList = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"

func configMap(name string, labels map[string]string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "labels": labels}}
}

// objectMeta decodes the metadata of an event's object.
func objectMeta(t *testing.T, ev rawEvent) metav1.ObjectMeta {
	t.Helper()
	var o struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(ev.Object, &o); err != nil {
		t.Fatalf("%s: %v", ev.Object, err)
	}
	return o.Metadata
}

func rvOf(t *testing.T, m metav1.ObjectMeta) int64 {
	t.Helper()
	n, err := strconv.ParseInt(m.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", m.ResourceVersion, err)
	}
	return n
}

// A watch-list sends the current objects (those the selector picks) as ADDED, then one
// BOOKMARK annotated as the end of the initial events at the list's revision, then changes.
func TestWatchListSendsInitialEventsThenBookmark(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	for i, team := range []string{"a", "a", "b"} {
		h.mustDo(http.StatusCreated, "POST", base, "", configMap(fmt.Sprint("cm", i), map[string]string{"team": team}), nil)
	}
	var first corev1.ConfigMap
	h.mustDo(http.StatusOK, "GET", base+"/cm0", "", nil, &first)
	cases := []struct {
		name, query string
		want        []string
	}{
		{"no resourceVersion", watchList, []string{"cm0", "cm1", "cm2"}},
		{"resourceVersion 0", watchList + "&resourceVersion=0", []string{"cm0", "cm1", "cm2"}},
		{"an older resourceVersion", watchList + "&resourceVersion=" + first.ResourceVersion, []string{"cm0", "cm1", "cm2"}},
		{"label selector", watchList + "&labelSelector=team%3Da", []string{"cm0", "cm1"}},
		{"field selector", watchList + "&fieldSelector=metadata.name%3Dcm2", []string{"cm2"}},
		{"Python's spelling of true", "watch=True&sendInitialEvents=True&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=TRUE", []string{"cm0", "cm1", "cm2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := h.openWatch(base + "?" + tc.query)
			var got []string
			var maxRV int64
			for {
				ev := next(t, w, false)
				m := objectMeta(t, ev)
				if ev.Type == "BOOKMARK" {
					if m.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
						t.Fatalf("the first bookmark is not the end of the initial events: %s", ev.Object)
					}
					if rv := rvOf(t, m); rv < maxRV {
						t.Fatalf("bookmark at %d, before an initial object at %d", rv, maxRV)
					}
					break
				}
				if ev.Type != "ADDED" {
					t.Fatalf("initial event %s %s", ev.Type, ev.Object)
				}
				got = append(got, m.Name)
				maxRV = max(maxRV, rvOf(t, m))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("initial objects (-want +got):\n%s", diff)
			}
		})
	}
}

// The end-of-initial-events bookmark comes after every initial object and before every later
// change, even while writes race with the list: each object shows up exactly once, on the
// side of the bookmark its revision belongs to.
func TestWatchListBookmarkSeparatesInitialFromLater(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	for i := range 20 {
		h.mustDo(http.StatusCreated, "POST", base, "", configMap(fmt.Sprint("before", i), nil), nil)
	}
	const racing = 40
	var wg sync.WaitGroup
	wg.Add(1)
	start := make(chan struct{})
	go func() {
		defer wg.Done()
		close(start)
		for i := range racing {
			h.mustDo(http.StatusCreated, "POST", base, "", configMap(fmt.Sprint("racing", i), nil), nil)
		}
	}()
	<-start
	w := h.openWatch(base + "?" + watchList)
	seen := map[string]int{}
	var bookmark, maxInitial int64
	for len(seen) < 20+racing {
		ev := next(t, w, false)
		m := objectMeta(t, ev)
		switch {
		case ev.Type == "BOOKMARK" && m.Annotations[metav1.InitialEventsAnnotationKey] == "true":
			if bookmark != 0 {
				t.Fatal("two end-of-initial-events bookmarks")
			}
			bookmark = rvOf(t, m)
			if bookmark < maxInitial {
				t.Fatalf("bookmark at %d, before an initial object at %d", bookmark, maxInitial)
			}
		case ev.Type == "BOOKMARK":
		case ev.Type != "ADDED":
			t.Fatalf("unexpected %s of %s", ev.Type, m.Name)
		case bookmark == 0:
			maxInitial = max(maxInitial, rvOf(t, m))
			seen[m.Name]++
		default:
			if rvOf(t, m) <= bookmark {
				t.Fatalf("%s at %d arrived after the bookmark at %d", m.Name, rvOf(t, m), bookmark)
			}
			seen[m.Name]++
		}
	}
	wg.Wait()
	if bookmark == 0 {
		t.Fatal("no end-of-initial-events bookmark")
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", name, n)
		}
	}
}

// sendInitialEvents=false watches from now (or from resourceVersion) with no initial events.
func TestWatchWithoutInitialEvents(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("old", nil), nil)
	w := h.openWatch(base + "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan")
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("new", nil), nil)
	ev := next(t, w, true)
	if m := objectMeta(t, ev); ev.Type != "ADDED" || m.Name != "new" {
		t.Fatalf("first event %s of %s, want ADDED of new", ev.Type, m.Name)
	}
}

// Options that do not go together are refused as Kubernetes refuses them.
func TestWatchListOptionRules(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	rev, err := testStore.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, query string
		code        int
		reason      metav1.StatusReason
		cause       metav1.CauseType
	}{
		{"initial events on a list", "sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 422, metav1.StatusReasonInvalid, ""},
		{"initial events without NotOlderThan", "watch=true&sendInitialEvents=true&allowWatchBookmarks=true", 422, metav1.StatusReasonInvalid, ""},
		{"initial events with an exact match", "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact&resourceVersion=1", 422, metav1.StatusReasonInvalid, ""},
		{"resourceVersionMatch on a plain watch", "watch=true&resourceVersionMatch=NotOlderThan", 422, metav1.StatusReasonInvalid, ""},
		{"a resourceVersion from the future", watchList + "&resourceVersion=" + strconv.FormatInt(rev+1000000, 10), 504, metav1.StatusReasonTimeout, metav1.CauseTypeResourceVersionTooLarge},
		{"limit that is not a number", "limit=ten", 400, metav1.StatusReasonBadRequest, ""},
		{"timeoutSeconds that is not a number", "watch=true&timeoutSeconds=soon", 400, metav1.StatusReasonBadRequest, ""},
		{"bad label selector", "labelSelector=a%3D%3D%3Db", 400, metav1.StatusReasonBadRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var st metav1.Status
			code, _ := h.do("GET", base+"?"+tc.query, "", nil, &st)
			if code != tc.code || st.Reason != tc.reason {
				t.Fatalf("got %d %s (%s), want %d %s", code, st.Reason, st.Message, tc.code, tc.reason)
			}
			if tc.cause != "" && (st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Type != tc.cause) {
				t.Fatalf("causes %+v, want %s", st.Details, tc.cause)
			}
		})
	}
}

// Booleans are read as Kubernetes reads them: true unless false or 0, in any case.
func TestBooleanQueryParameters(t *testing.T) {
	h := newHarness(t)
	ns := h.namespace()
	base := "/api/v1/namespaces/" + ns + "/configmaps"
	h.mustDo(http.StatusCreated, "POST", base, "", configMap("x", nil), nil)
	for _, v := range []string{"true", "True", "TRUE", "1", "yes"} {
		t.Run("watch="+v, func(t *testing.T) {
			w := h.openWatch(base + "?watch=" + v)
			if ev := next(t, w, true); ev.Type != "ADDED" {
				t.Fatalf("watch=%s answered %s, not a watch", v, ev.Type)
			}
		})
	}
	for _, v := range []string{"false", "False", "0"} {
		t.Run("watch="+v, func(t *testing.T) {
			var list corev1.ConfigMapList
			h.mustDo(http.StatusOK, "GET", base+"?watch="+v, "", nil, &list)
			if len(list.Items) != 1 {
				t.Fatalf("watch=%s: a list of %d", v, len(list.Items))
			}
		})
	}
}
