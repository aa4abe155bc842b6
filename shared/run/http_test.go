package run

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// The server answers until its context ends; a request under way then finishes, and a stream
// that never ends is closed once the drain is over.
func TestHTTPServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		<-release
		_, _ = io.WriteString(w, "slow done")
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	s := &HTTPServer{Name: "test", Server: &http.Server{Handler: mux}, Listener: ln, Drain: 500 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	base := "http://" + ln.Addr().String()

	get := func(path string) (string, error) {
		resp, err := http.Get(base + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if body, err := get("/ok"); err != nil || body != "ok" {
		t.Fatalf("GET /ok = %q, %v", body, err)
	}
	slow := make(chan string, 1)
	go func() { body, _ := get("/slow"); slow <- body }()
	streamResp, err := http.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer streamResp.Body.Close()
	time.Sleep(50 * time.Millisecond) // let /slow reach its handler

	cancel()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if body := <-slow; body != "slow done" {
		t.Errorf("the request under way at shutdown got %q, want it finished", body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v, want nil after a shutdown that closed a stream", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after the drain")
	}
	if _, err := http.Get(base + "/ok"); err == nil {
		t.Error("the server still answers after Start returned")
	}
}

func TestHTTPServerPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &HTTPServer{Name: "metrics", Server: &http.Server{Addr: ln.Addr().String()}}
	if err := s.Start(t.Context()); err == nil {
		t.Fatal("Start on a taken port succeeded")
	}
}
