package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// spdyExec serves an exec over SPDY with the v4 channel protocol: it writes out and err to
// stdout and stderr and ends with exit status 3 on the error stream.
func spdyExec(t *testing.T, gotStreams *[]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := httpstream.Handshake(r, w, []string{"v4.channel.k8s.io"}); err != nil {
			t.Errorf("SPDY handshake: %v", err)
			return
		}
		opened := make(chan httpstream.Stream, 8)
		conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(s httpstream.Stream, _ <-chan struct{}) error {
			opened <- s
			return nil
		})
		if conn == nil {
			t.Error("SPDY upgrade failed")
			return
		}
		defer conn.Close()
		streams := map[string]httpstream.Stream{}
		for len(streams) < 3 {
			select {
			case s := <-opened:
				streams[s.Headers().Get(corev1.StreamType)] = s
				*gotStreams = append(*gotStreams, s.Headers().Get(corev1.StreamType))
			case <-time.After(30 * time.Second):
				t.Errorf("the client opened only %v", *gotStreams)
				return
			}
		}
		io.WriteString(streams[corev1.StreamTypeStdout], "out\n")
		streams[corev1.StreamTypeStdout].Close()
		io.WriteString(streams[corev1.StreamTypeStderr], "err\n")
		streams[corev1.StreamTypeStderr].Close()
		json.NewEncoder(streams[corev1.StreamTypeError]).Encode(metav1.Status{
			Status: metav1.StatusFailure, Reason: "NonZeroExitCode",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: "3"}}},
		})
		streams[corev1.StreamTypeError].Close()
		select {
		case <-conn.CloseChan():
		case <-time.After(30 * time.Second):
			t.Error("the client did not close the connection")
		}
	}
}

// A server without WebSocket support (the upgrade refused with a plain 400) gets the same
// exec over SPDY, as kubectl falls back; the streams stay apart and the exit status is ours.
func TestExecFallsBackToSPDY(t *testing.T) {
	var streams []string
	f := &fakeAPI{routes: map[string]http.HandlerFunc{
		"GET /api/v1/namespaces/default/pods/web": jsonReply(podJSON(t, corev1.PodRunning, "app")),
		"GET /api/v1/namespaces/default/pods/web/exec": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no websockets here", http.StatusBadRequest)
		},
		"POST /api/v1/namespaces/default/pods/web/exec": spdyExec(t, &streams),
	}}
	out, errOut, code := run(t, f, "", "exec", "web", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
	if code != 3 || out != "out\n" || errOut != "err\ncommand terminated with exit code 3\n" {
		t.Errorf("exit %d stdout %q stderr %q, want exit 3, stdout %q, stderr %q", code, out, errOut, "out\n", "err\ncommand terminated with exit code 3\n")
	}
	if diff := cmp.Diff([]string{"error", "stdout", "stderr"}, streams); diff != "" {
		t.Errorf("streams opened (-want +got):\n%s", diff)
	}
	want := []string{"GET /api/v1/namespaces/default/pods/web", "GET /api/v1/namespaces/default/pods/web/exec", "POST /api/v1/namespaces/default/pods/web/exec"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}
