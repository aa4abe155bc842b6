package build

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sv1 "minik8s.io/shared/apis/serverless/v1"
)

// The runtime contract (shared/apis/serverless/v1/wellknown.go) checked against the runtime
// script itself, run by this machine's python3 on a function in a temporary folder.

// runtimeScript is images/python-runtime/runtime.py in this repository.
var runtimeScript = filepath.Join("..", "..", "..", "images", "python-runtime", "runtime.py")

func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		if testing.Short() {
			t.Skip("no python3 (-short)")
		}
		t.Fatal("the runtime contract test needs python3 (apt-get install python3)")
	}
	return p
}

// syncBuffer is a bytes.Buffer written by the process's stderr copier and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type runtimeProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan struct{} // closed once the process has exited; err is then its Wait
	err    error
}

// startRuntime runs the runtime on a free port over a function made of files, and returns
// once it listens (not necessarily ready).
func startRuntime(t *testing.T, handler string, files map[string]string, env ...string) *runtimeProc {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(python(t), runtimeScript)
	cmd.Env = append(os.Environ(), sv1.EnvHandler+"="+handler, "FUNCTION_DIR="+dir,
		"RUNTIME_PORT=0", "RUNTIME_DRAIN_SECONDS=0.3", "PYTHONDONTWRITEBYTECODE=1")
	cmd.Env = append(cmd.Env, env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &runtimeProc{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(p.stderr, line)
			if rest, ok := strings.CutPrefix(line, "runtime: listening on :"); ok {
				port <- rest
			}
		}
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case pt := <-port:
		p.url = "http://127.0.0.1:" + pt
	case <-p.exited:
		t.Fatalf("runtime exited before listening (%v):\n%s", p.err, p.stderr)
	case <-time.After(30 * time.Second):
		t.Fatalf("runtime did not listen within 30s:\n%s", p.stderr)
	}
	return p
}

type answer struct {
	code     int
	body     string
	servedBy string
}

func (p *runtimeProc) do(t *testing.T, method, path, body string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, p.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, p.stderr)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return answer{resp.StatusCode, string(b), resp.Header.Get(sv1.HeaderServedBy)}
}

// waitReady polls /readyz until it answers 200; the deadline is generous, the import is fast.
func (p *runtimeProc) waitReady(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if a := p.do(t, "GET", sv1.RuntimeReadyPath, ""); a.code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within 30s:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const arith = `
import json

def handler(event):
    op = event.get("op", "add")
    if op == "add":
        return {"result": event["a"] + event["b"]}
    if op == "div":
        return {"result": event["a"] / event["b"]}
    if op == "echo":
        return event
    if op == "set":
        return {1, 2}
    return None
`

func TestRuntimeContract(t *testing.T) {
	p := startRuntime(t, "main.handler", map[string]string{"main.py": arith})
	p.waitReady(t)
	host, _ := os.Hostname()
	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		want                     string // the body, or for 500s the error field
	}{
		{"json in and out", "POST", "/invoke", `{"a": 2, "b": 40}`, 200, `{"result": 42}`},
		{"other parameters", "POST", "/invoke", `{"a": 1.5, "b": 1}`, 200, `{"result": 2.5}`},
		{"unicode and nesting", "POST", "/invoke", `{"op": "echo", "s": "héllo", "l": [1, {"x": null}]}`, 200, `{"op": "echo", "s": "h\u00e9llo", "l": [1, {"x": null}]}`},
		{"null result", "POST", "/invoke", `{"op": "none"}`, 200, `null`},
		{"empty body is {}", "POST", "/invoke", ``, 500, `KeyError: 'a'`},
		{"not json", "POST", "/invoke", `{"a": `, 400, ``},
		{"handler raised", "POST", "/invoke", `{"op": "div", "a": 1, "b": 0}`, 500, `ZeroDivisionError: division by zero`},
		{"result not json", "POST", "/invoke", `{"op": "set"}`, 500, `TypeError: the result of main.handler is not JSON: Object of type set is not JSON serializable`},
		{"healthz", "GET", sv1.RuntimeHealthPath, ``, 200, `{"status": "ok"}`},
		{"readyz", "GET", sv1.RuntimeReadyPath, ``, 200, `{"status": "ready", "handler": "main.handler"}`},
		{"unknown path", "GET", "/nope", ``, 404, ``},
		{"invoke by GET", "GET", "/invoke", ``, 405, ``},
		{"healthz by POST", "POST", "/healthz", `{}`, 405, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := p.do(t, tc.method, tc.path, tc.body)
			if a.code != tc.code {
				t.Fatalf("status %d, want %d: %s", a.code, tc.code, a.body)
			}
			if a.servedBy == "" || a.servedBy != host {
				t.Errorf("%s = %q, want the hostname %q", sv1.HeaderServedBy, a.servedBy, host)
			}
			switch {
			case tc.code == 500:
				var re sv1.RuntimeError
				if err := json.Unmarshal([]byte(a.body), &re); err != nil {
					t.Fatalf("500 body is not a RuntimeError: %v: %s", err, a.body)
				}
				if re.Error != tc.want {
					t.Errorf("error %q, want %q", re.Error, tc.want)
				}
				if tc.name == "result not json" {
					return // nothing of the user's raised
				}
				// The tail names the user's code and the exception, not the runtime.
				if !strings.Contains(re.Traceback, "main.py\", line") || !strings.HasSuffix(re.Traceback, tc.want) {
					t.Errorf("traceback does not end in the user's code:\n%s", re.Traceback)
				}
				if strings.Contains(re.Traceback, "runtime.py") {
					t.Errorf("traceback shows the runtime's frames:\n%s", re.Traceback)
				}
			case tc.code == 400:
				if !strings.Contains(a.body, "not JSON") {
					t.Errorf("400 body %s", a.body)
				}
			case tc.want != "":
				if a.body != tc.want {
					t.Errorf("body %s, want %s", a.body, tc.want)
				}
			}
		})
	}
}

// rawHTTP sends bytes on a fresh connection and reads until the server closes it or
// answers want answers.
func rawHTTP(t *testing.T, url, req string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("read: %v (got %q)", err, b)
	}
	return string(b)
}

func TestRuntimeHTTP(t *testing.T) {
	p := startRuntime(t, "main.handler", map[string]string{"main.py": arith})
	p.waitReady(t)
	for _, tc := range []struct {
		name, req string
		want      []string // in order in the answer
	}{
		{"chunked body, connection close", "POST /invoke HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
			"6\r\n{\"a\": \r\nb\r\n1, \"b\": 2}\r\n0\r\n\r\n",
			[]string{"HTTP/1.1 200 OK\r\n", "Connection: close\r\n", "\r\n{\"result\": 3}"}},
		{"expect 100-continue", "POST /invoke HTTP/1.1\r\nContent-Length: 16\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n{\"a\": 1, \"b\": 1}",
			[]string{"HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\n", "{\"result\": 2}"}},
		{"HTTP/1.0 closes", "GET /healthz HTTP/1.0\r\n\r\n", []string{"HTTP/1.1 200 OK\r\n", "Connection: close\r\n"}},
		{"two requests on one connection", "GET /healthz HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\nConnection: close\r\n\r\n",
			[]string{"HTTP/1.1 200 OK\r\n", "HTTP/1.1 404 Not Found\r\n", "Connection: close\r\n"}},
		{"not http", "hello\r\n\r\n", []string{"HTTP/1.1 400 Bad Request\r\n", "not an HTTP/1 request line"}},
		{"body too large", "POST /invoke HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", []string{"HTTP/1.1 413 Payload Too Large\r\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rawHTTP(t, p.url, tc.req)
			rest := got
			for _, w := range tc.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("answer lacks %q (in order):\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestRuntimeKeepAlive(t *testing.T) {
	p := startRuntime(t, "main.handler", map[string]string{"main.py": arith})
	p.waitReady(t)
	// The gateway reuses connections: many calls in a row on one, some concurrent.
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				resp, err := c.Post(p.url+"/invoke", "application/json", strings.NewReader(fmt.Sprintf(`{"a": %d, "b": %d}`, g, i)))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf(`{"result": %d}`, g+i); string(b) != want {
					errs <- fmt.Errorf("got %s, want %s", b, want)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestRuntimeImportFailure(t *testing.T) {
	p := startRuntime(t, "main.handler", map[string]string{
		"main.py":   "import helper\n\ndef handler(e):\n    return e\n",
		"helper.py": "x = 1\nraise RuntimeError('no database')\n",
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stderr.String(), "cannot import") {
		if time.Now().After(deadline) {
			t.Fatalf("no import failure logged:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if a := p.do(t, "GET", sv1.RuntimeHealthPath, ""); a.code != 200 {
		t.Errorf("healthz %d after a failed import, want 200 (the server runs)", a.code)
	}
	a := p.do(t, "GET", sv1.RuntimeReadyPath, "")
	if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, "RuntimeError: no database") {
		t.Errorf("readyz %d %s, want 503 naming the error", a.code, a.body)
	}
	a = p.do(t, "POST", "/invoke", "{}")
	var re sv1.RuntimeError
	if a.code != http.StatusServiceUnavailable || json.Unmarshal([]byte(a.body), &re) != nil ||
		!strings.Contains(re.Error, "cannot import main.handler: RuntimeError: no database") ||
		!strings.Contains(re.Traceback, "helper.py\", line 2") {
		t.Errorf("invoke %d %s, want 503 with the import's error and traceback", a.code, a.body)
	}
	if log := p.stderr.String(); !strings.Contains(log, "Traceback (most recent call last)") || !strings.Contains(log, "helper.py") {
		t.Errorf("the traceback is not logged:\n%s", log)
	}
}

func TestRuntimeMissingHandler(t *testing.T) {
	p := startRuntime(t, "main.handle", map[string]string{"main.py": arith})
	deadline := time.Now().Add(30 * time.Second)
	for {
		a := p.do(t, "GET", sv1.RuntimeReadyPath, "")
		if strings.Contains(a.body, "failed") {
			if a.code != 503 || !strings.Contains(a.body, "has no function 'handle'") {
				t.Errorf("readyz %d %s", a.code, a.body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz never reported the failure:\n%s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRuntimeHandlerFile(t *testing.T) {
	// A function image names its handler in a file; FUNCTION_HANDLER, when set, wins.
	file := filepath.Join(t.TempDir(), "handler")
	if err := os.WriteFile(file, []byte("pkg.entry.run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"pkg/__init__.py": "", "pkg/entry.py": "def run(e):\n    return 'run'\n\ndef other(e):\n    return 'other'\n",
	}
	for handler, want := range map[string]string{"": `"run"`, "pkg.entry.other": `"other"`} {
		p := startRuntime(t, handler, files, "FUNCTION_HANDLER_FILE="+file)
		p.waitReady(t)
		if a := p.do(t, "POST", "/invoke", "{}"); a.code != 200 || a.body != want {
			t.Errorf("FUNCTION_HANDLER=%q: %d %s, want %s", handler, a.code, a.body, want)
		}
	}
}

func TestRuntimeReadyAfterImport(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	// The module's import waits for the test to create the gate file.
	p := startRuntime(t, "main.handler", map[string]string{"main.py": fmt.Sprintf(`
import os, time
while not os.path.exists(%q):
    time.sleep(0.01)

def handler(event):
    return "imported"
`, gate)})
	if a := p.do(t, "GET", sv1.RuntimeHealthPath, ""); a.code != 200 {
		t.Fatalf("healthz %d while importing, want 200", a.code)
	}
	if a := p.do(t, "GET", sv1.RuntimeReadyPath, ""); a.code != 503 || !strings.Contains(a.body, "loading") {
		t.Fatalf("readyz %d %s while importing, want 503 loading", a.code, a.body)
	}
	// A call during the import waits for it.
	got := make(chan answer, 1)
	go func() { got <- p.do(t, "POST", "/invoke", "{}") }()
	time.Sleep(100 * time.Millisecond)
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p.waitReady(t)
	if a := <-got; a.code != 200 || a.body != `"imported"` {
		t.Errorf("call made during the import: %d %s", a.code, a.body)
	}
}

func TestRuntimeGracefulStop(t *testing.T) {
	p := startRuntime(t, "main.handler", map[string]string{"main.py": `
import time

def handler(event):
    time.sleep(event.get("sleep", 0))
    return {"slept": event.get("sleep", 0)}
`})
	p.waitReady(t)
	// An idle keep-alive connection must not hold the exit up.
	idle := &http.Client{Transport: &http.Transport{}}
	resp, err := idle.Get(p.url + sv1.RuntimeHealthPath)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	inFlight := make(chan answer, 1)
	go func() { inFlight <- p.do(t, "POST", "/invoke", `{"sleep": 1.5}`) }()
	// The call reaches the handler well within the 1.5 s it sleeps there; SIGTERM comes while
	// it is in flight either way (sent before it arrived, it would still be taken during the
	// drain delay).
	time.Sleep(300 * time.Millisecond)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Readiness fails at once while calls are still taken during the drain delay.
	waitFor(t, "readyz 503 after SIGTERM", func() bool {
		return p.do(t, "GET", sv1.RuntimeReadyPath, "").code == http.StatusServiceUnavailable
	})
	a := <-inFlight
	if a.code != 200 || a.body != `{"slept": 1.5}` {
		t.Errorf("the call in flight at SIGTERM: %d %s", a.code, a.body)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("runtime exited with %v after SIGTERM, want 0:\n%s", p.err, p.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("runtime still running 30s after SIGTERM:\n%s", p.stderr)
	}
	if log := p.stderr.String(); !strings.Contains(log, "stopped") {
		t.Errorf("no clean stop logged:\n%s", log)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
