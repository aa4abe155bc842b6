package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// slowClient sends a request as a slow or busy client does: the headers, a pause longer than
// net/http's half second between answering and closing, then the body in two writes. It
// returns the answer's status code, or the error that kept it from reading one.
func slowClient(addr, method, path, contentType, token string, body []byte, keepAlive bool) (*http.Response, net.Conn, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	var hdr strings.Builder
	fmt.Fprintf(&hdr, "%s %s HTTP/1.1\r\nHost: minik8s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n", method, path, token, len(body))
	if contentType != "" {
		fmt.Fprintf(&hdr, "Content-Type: %s\r\n", contentType)
	}
	if !keepAlive {
		hdr.WriteString("Connection: close\r\n")
	}
	hdr.WriteString("\r\n")
	if _, err := io.WriteString(conn, hdr.String()); err != nil {
		return nil, conn, fmt.Errorf("write headers: %w", err)
	}
	time.Sleep(700 * time.Millisecond)
	half := len(body) / 2
	for _, part := range [][]byte{body[:half], body[half:]} {
		if _, err := conn.Write(part); err != nil {
			return nil, conn, fmt.Errorf("write body: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, conn, fmt.Errorf("read answer: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, conn, fmt.Errorf("read answer: %w", err)
	}
	return resp, conn, nil
}

// TestRefusedRequestsAreAnswered: a request refused before its body is read still gets its
// Status answer when the client is slow to send the body, on a connection that is to close and
// on a kept-alive one, which stays usable.
func TestRefusedRequestsAreAnswered(t *testing.T) {
	h := newHarness(t)
	addr := strings.TrimPrefix(h.url, "http://")
	small := []byte(`{"metadata":{"labels":{"a":"b"}}}`)
	large := []byte(`{"metadata":{"annotations":{"a":"` + strings.Repeat("x", 600<<10) + `"}}}`)
	over := make([]byte, MaxBodyBytes+(1<<20))
	cases := []struct {
		name, method, path, contentType, token string
		body                                   []byte
		want                                   int
	}{
		{"patch as text/plain", "PATCH", "/api/v1/namespaces/default/pods/p", "text/plain", testToken, small, http.StatusUnsupportedMediaType},
		{"strategic merge patch of a function", "PATCH", "/apis/serverless.minik8s.io/v1/namespaces/default/functions/f",
			"application/strategic-merge-patch+json", testToken, small, http.StatusUnsupportedMediaType},
		{"large patch as text/plain", "PATCH", "/api/v1/namespaces/default/configmaps/c", "text/plain", testToken, large, http.StatusUnsupportedMediaType},
		{"body over the limit", "POST", "/api/v1/namespaces/default/configmaps", "application/json", testToken, over, http.StatusRequestEntityTooLarge},
		{"unknown path", "POST", "/apis/nothing.example/v1/things", "application/json", testToken, small, http.StatusNotFound},
		{"bad token", "POST", "/api/v1/namespaces/default/pods", "application/json", "wrong", small, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		for _, keepAlive := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s keep-alive=%v", tc.name, keepAlive), func(t *testing.T) {
				t.Parallel()
				resp, conn, err := slowClient(addr, tc.method, tc.path, tc.contentType, tc.token, tc.body, keepAlive)
				if conn != nil {
					defer conn.Close()
				}
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				if resp.StatusCode != tc.want {
					t.Fatalf("answer %d, want %d", resp.StatusCode, tc.want)
				}
				if !keepAlive || resp.Close {
					return
				}
				// The kept-alive connection carries the next request.
				fmt.Fprintf(conn, "GET /version HTTP/1.1\r\nHost: minik8s\r\nAuthorization: Bearer %s\r\n\r\n", testToken)
				next, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil || next.StatusCode != http.StatusOK {
					t.Fatalf("next request on the kept-alive connection: %v, %v", next, err)
				}
			})
		}
	}
}
