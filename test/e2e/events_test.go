package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"

	"minik8s.io/shared/testwait"
)

// TestEventsV1Recorder records with client-go's events.k8s.io/v1 recorder, the one
// controller-runtime's managers hand out, and finds the events where `kubectl get events`
// and core/v1 watchers look; a core/v1 Event written by kubectl reaches events.k8s.io/v1
// lists and watches the same way.
func TestEventsV1Recorder(t *testing.T) {
	srv := sharedServer(t)
	ks := kubectls(t, srv)
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := "e2e-events-v1"
	createNamespace(t, ks[0], ns)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	coreWatch, err := cs.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer coreWatch.Stop()
	newWatch, err := cs.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer newWatch.Stop()

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(clientgoscheme.Scheme, "minik8s.io/e2e-recorder")
	recorder.Eventf(cm, nil, corev1.EventTypeWarning, "Drifted", "Reconciling", "config %s drifted", cm.Name)

	recorded := nextWatched(t, coreWatch, func(ev *corev1.Event) bool { return ev.Reason == "Drifted" })
	if recorded.Message != "config web drifted" || recorded.InvolvedObject.Kind != "ConfigMap" || recorded.InvolvedObject.Name != "web" ||
		recorded.ReportingController != "minik8s.io/e2e-recorder" || recorded.Action != "Reconciling" || recorded.EventTime.IsZero() {
		t.Fatalf("core/v1 watch saw %+v", recorded)
	}
	for _, k := range ks {
		out := k.ok(t, "-n", ns, "get", "events").stdout
		for _, want := range []string{"Drifted", "configmap/web", "config web drifted"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s kubectl get events lacks %q:\n%s", k.name, want, out)
			}
		}
	}

	// A repeat makes a series, which the recorder patches in through events.k8s.io/v1.
	recorder.Eventf(cm, nil, corev1.EventTypeWarning, "Drifted", "Reconciling", "config %s drifted", cm.Name)
	testwait.For(t, "the repeated event to count 2 in its series", func() bool {
		ev, err := cs.CoreV1().Events(ns).Get(ctx, recorded.Name, metav1.GetOptions{})
		return err == nil && ev.Series != nil && ev.Series.Count == 2
	})

	// The other way: a core/v1 Event written by the real kubectl, read through events.k8s.io.
	file := render(t, t.TempDir(), "event.yaml", manifest{Suffix: "core", NS: ns, Rev: "1"})
	ks[0].ok(t, "create", "-f", file)
	seen := nextWatched(t, newWatch, func(ev *eventsv1.Event) bool { return ev.Reason == "Testing" })
	if seen.Note != "end-to-end test event" || seen.Regarding.Name != "e2e-pod" || seen.DeprecatedCount != 1 || seen.DeprecatedSource.Component != "e2e" {
		t.Fatalf("events.k8s.io/v1 watch saw %+v", seen)
	}
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=e2e-pod"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != seen.Name {
		t.Fatalf("regarding.name=e2e-pod listed %v, %v", list, err)
	}
	for _, k := range ks {
		out := k.ok(t, "-n", ns, "get", "events.events.k8s.io", "-o", "jsonpath={range .items[*]}{.note}{\"\\n\"}{end}").stdout
		for _, want := range []string{"config web drifted", "end-to-end test event"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s kubectl get events.events.k8s.io lacks %q:\n%s", k.name, want, out)
			}
		}
	}
}

// nextWatched returns the first object of type T the watch delivers that match accepts.
func nextWatched[T runtime.Object](t *testing.T, w watch.Interface, match func(T) bool) T {
	t.Helper()
	deadline := time.After(testwait.Deadline)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			if obj, isT := ev.Object.(T); isT && match(obj) {
				return obj
			}
		case <-deadline:
			var zero T
			t.Fatalf("no matching %T on the watch within %s", zero, testwait.Deadline)
		}
	}
}
