package abuse

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	a, b := Generate(7, 400, 10, "ns"), Generate(7, 400, 10, "ns")
	if len(a) != 400 {
		t.Fatalf("%d requests, want 400", len(a))
	}
	seen := map[string]int{}
	slow := 0
	for i := range a {
		if a[i].String() != b[i].String() || string(a[i].Body) != string(b[i].Body) {
			t.Fatalf("request %d differs for the same seed: %s and %s", i, a[i], b[i])
		}
		seen[a[i].Mutation]++
		if a[i].Slow {
			slow++
		}
		if !strings.Contains(a[i].Path, "/namespaces/ns/") {
			t.Errorf("request %s is outside the namespace", a[i])
		}
	}
	for _, m := range mutations {
		if seen[m.name] == 0 {
			t.Errorf("no request of mutation %q in 400", m.name)
		}
	}
	if slow != 40 {
		t.Errorf("%d slow requests, want one in ten (40)", slow)
	}
}

// A server that answers some requests and drops the connection of others without an answer:
// Send counts both, on fresh connections and on kept-alive ones.
func TestSendCountsAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == "DELETE" {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return
		}
		w.WriteHeader(http.StatusTeapot)
	}))
	defer srv.Close()
	reqs := Generate(3, 60, 0, "ns")
	deletes := 0
	for _, r := range reqs {
		if r.Method == "DELETE" {
			deletes++
		}
	}
	tg := Target{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: "t"}
	for _, keepAlive := range []bool{false, true} {
		tally := Send(t.Context(), tg, reqs, keepAlive, 4)
		if tally.Sent != 60 || tally.Answered != 60-deletes || tally.ByCode[http.StatusTeapot] != 60-deletes || len(tally.Unanswered) != deletes {
			t.Errorf("keepAlive=%v: sent %d, answered %d (%s), unanswered %d; want 60, %d, all 418, %d",
				keepAlive, tally.Sent, tally.Answered, tally.Codes(), len(tally.Unanswered), 60-deletes, deletes)
		}
		if keepAlive && tally.Connections >= 60 {
			t.Errorf("kept-alive clients opened %d connections for 60 requests", tally.Connections)
		}
	}
}
