package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAddr(t *testing.T) {
	tests := []struct {
		port    string
		want    string
		wantErr bool
	}{
		{port: "", want: ":8080"},
		{port: "9000", want: ":9000"},
		{port: "0", wantErr: true},
		{port: "70000", wantErr: true},
		{port: "http", wantErr: true},
	}
	for _, tt := range tests {
		t.Run("PORT="+tt.port, func(t *testing.T) {
			got, err := Addr(func(k string) string {
				if k == "PORT" {
					return tt.port
				}
				return ""
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Addr() error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Addr() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoggedWritesOneLinePerRequest(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	h := Logged(logger, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/pot?x=1", nil))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1: %q", len(lines), buf.String())
	}
	for _, want := range []string{`"msg":"request"`, `"method":"GET"`, `"path":"/pot"`, `"status":418`, `"bytes":15`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %s lacks %s", lines[0], want)
		}
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	// Find a free port, then let Run listen on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, slog.New(slog.DiscardHandler), addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "up")
		}), 0)
	}()

	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server on %s never answered: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if diff := cmp.Diff("up", body); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return 30s after its context was cancelled")
	}
	if _, err := http.Get("http://" + addr + "/"); err == nil {
		t.Error("server still answers after Run returned")
	}
}

func TestRunReportsListenError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = Run(t.Context(), slog.New(slog.DiscardHandler), ln.Addr().String(), http.NotFoundHandler(), 0)
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("Run on a taken port = %v, want a listen error", err)
	}
}

func TestShutdownDelayKeepsServing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, slog.New(slog.DiscardHandler), addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "up")
		}), 2*time.Second)
	}()
	get := func() error {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for get() != nil {
		if time.Now().After(deadline) {
			t.Fatal("server never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := get(); err != nil {
		t.Errorf("refused right after the stop, within its shutdown delay: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its delay")
	}
	if get() == nil {
		t.Error("still serving after Run returned")
	}
	for _, tt := range []struct {
		v       string
		want    time.Duration
		wantErr bool
	}{{"", 0, false}, {"3s", 3 * time.Second, false}, {"x", 0, true}, {"-1s", 0, true}} {
		got, err := ShutdownDelay(func(string) string { return tt.v })
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ShutdownDelay(%q) = %v, %v", tt.v, got, err)
		}
	}
}
