package abuse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// MaxBodyBytes is the apiserver's request body limit; Oversized bodies pass it by 1 MiB.
const MaxBodyBytes = 3 << 20

// Request is one malformed write.
type Request struct {
	Method, Path, ContentType string
	Body                      []byte
	// Mutation names what is wrong with it.
	Mutation string
	// Slow sends it as a slow or busy client does: the headers, a pause longer than the
	// server's half second between answering and closing, then the body in two writes.
	Slow bool
}

func (r Request) String() string {
	ct := r.ContentType
	if ct == "" {
		ct = "no content type"
	}
	return fmt.Sprintf("%s %s (%s, %s, %d bytes)", r.Method, r.Path, ct, r.Mutation, len(r.Body))
}

// kind is a resource the generator writes, with a valid object of it.
type kind struct {
	collection string
	object     map[string]any
}

func kinds(namespace string) []kind {
	container := map[string]any{"name": "c", "image": "minik8s/echo:1.0"}
	labels := map[string]any{"app": "bad"}
	return []kind{
		{"/api/v1/namespaces/" + namespace + "/pods", map[string]any{
			"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "bad"},
			"spec": map[string]any{"containers": []any{container}}}},
		{"/apis/apps/v1/namespaces/" + namespace + "/deployments", map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "bad"},
			"spec": map[string]any{"replicas": 1, "selector": map[string]any{"matchLabels": labels},
				"template": map[string]any{"metadata": map[string]any{"labels": labels},
					"spec": map[string]any{"containers": []any{container}}}}}},
		{"/api/v1/namespaces/" + namespace + "/services", map[string]any{
			"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "bad"},
			"spec": map[string]any{"selector": labels, "ports": []any{map[string]any{"port": 80}}}}},
		{"/apis/serverless.minik8s.io/v1/namespaces/" + namespace + "/functions", map[string]any{
			"apiVersion": "serverless.minik8s.io/v1", "kind": "Function", "metadata": map[string]any{"name": "bad"},
			"spec": map[string]any{"runtime": "python3", "source": "def handler(event):\n    return event\n"}}},
	}
}

// ContentTypes are those the generator sends, right and wrong ones ("" sends none).
var ContentTypes = []string{
	"application/json", "application/yaml", "application/merge-patch+json",
	"application/strategic-merge-patch+json", "application/json-patch+json",
	"application/apply-patch+yaml", "text/plain", "application/x-www-form-urlencoded", "",
}

// mutations turn a valid object into a body that no verb may accept.
// weight is how many of 100 requests get each; the big bodies are few, as they cost most.
var mutations = []struct {
	name   string
	weight int
	fn     func(r *rand.Rand, obj map[string]any) []byte
}{
	{"truncated JSON", 20, func(r *rand.Rand, obj map[string]any) []byte {
		b := mustJSON(obj)
		return b[:1+r.IntN(len(b)-2)]
	}},
	{"wrong type", 20, func(r *rand.Rand, obj map[string]any) []byte {
		o := clone(obj)
		o["spec"] = []any{"spec", 1, "a string", true, []any{}, map[string]any{"replicas": "three"}}[r.IntN(6)]
		if _, isMap := o["spec"].(map[string]any); isMap {
			o["metadata"] = "not an object"
		}
		return mustJSON(o)
	}},
	{"not JSON", 15, func(r *rand.Rand, _ map[string]any) []byte {
		return []byte(strings.Repeat("x{]", 1+r.IntN(400)))
	}},
	{"empty", 10, func(*rand.Rand, map[string]any) []byte { return nil }},
	{"invalid name", 15, func(r *rand.Rand, obj map[string]any) []byte {
		o := clone(obj)
		o["metadata"] = map[string]any{"name": []string{"Bad_Name!", "-x", strings.Repeat("n", 300)}[r.IntN(3)]}
		return mustJSON(o)
	}},
	{"wrong kind", 14, func(_ *rand.Rand, obj map[string]any) []byte {
		o := clone(obj)
		o["kind"] = "NoSuchKind"
		return mustJSON(o)
	}},
	{"large and broken", 4, func(r *rand.Rand, obj map[string]any) []byte {
		o := clone(obj)
		o["metadata"] = map[string]any{"name": "bad", "annotations": map[string]any{"big": strings.Repeat("a", 300<<10+r.IntN(200<<10))}}
		b := mustJSON(o)
		return b[:len(b)-1]
	}},
	{"oversized", 2, func(*rand.Rand, map[string]any) []byte {
		return bytes.Repeat([]byte(" "), MaxBodyBytes+1<<20)
	}},
}

func pickMutation(pick int) int {
	for i, m := range mutations {
		if pick < m.weight {
			return i
		}
		pick -= m.weight
	}
	return len(mutations) - 1
}

// Generate returns n malformed writes to resources in namespace, the same for the same seed.
// One in slowEvery is Slow (none when slowEvery is 0).
func Generate(seed uint64, n, slowEvery int, namespace string) []Request {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ks := kinds(namespace)
	out := make([]Request, 0, n)
	for i := range n {
		k := ks[r.IntN(len(ks))]
		m := mutations[pickMutation(r.IntN(100))]
		req := Request{
			Method:      []string{"POST", "PUT", "PATCH", "DELETE"}[r.IntN(4)],
			ContentType: ContentTypes[r.IntN(len(ContentTypes))],
			Body:        m.fn(r, k.object),
			Mutation:    m.name,
			Slow:        slowEvery > 0 && i%slowEvery == 0,
		}
		req.Path = k.collection
		if req.Method != "POST" {
			req.Path += "/bad"
		}
		out = append(out, req)
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain maps of JSON values
	}
	return b
}

func clone(obj map[string]any) map[string]any {
	var o map[string]any
	if err := json.Unmarshal(mustJSON(obj), &o); err != nil {
		panic(err)
	}
	return o
}

// Target is the apiserver to send to.
type Target struct {
	// Addr is host:port.
	Addr  string
	Token string
	// TLS is nil for plain HTTP.
	TLS *tls.Config
}

// Result is what one request got: a status code, or the error that kept it from an answer.
type Result struct {
	Request Request
	Code    int
	Err     error
	// Latency is from the request's first byte written to its answer's last byte read.
	Latency time.Duration
}

// Tally counts the answers of a run.
type Tally struct {
	Sent     int
	Answered int
	// ByCode counts the answers by status code.
	ByCode map[int]int
	// Unanswered are the requests that got no answer, with why.
	Unanswered []Result
	// Connections is how many connections were opened.
	Connections int
	Elapsed     time.Duration
	// Latencies are those of the answered requests that were not Slow.
	Latencies []time.Duration
}

// ServerErrors counts the 5xx answers.
func (t Tally) ServerErrors() int {
	n := 0
	for code, c := range t.ByCode {
		if code >= 500 {
			n += c
		}
	}
	return n
}

// Codes lists the answers by code, as "415×1203 400×412".
func (t Tally) Codes() string {
	codes := make([]int, 0, len(t.ByCode))
	for c := range t.ByCode {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d×%d", c, t.ByCode[c])
	}
	return strings.Join(parts, " ")
}

// Send sends reqs over workers concurrent clients and counts the answers. Without keepAlive
// each request goes on a fresh connection and asks to close it; with it, each client keeps
// its connection for request after request, opening another only when the server closed it.
// Clients write a request and then read its answer, as simple clients do.
func Send(ctx context.Context, tg Target, reqs []Request, keepAlive bool, workers int) Tally {
	start := time.Now()
	results := make([]Result, len(reqs))
	conns := make([]int, workers)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c *clientConn
			defer func() {
				if c != nil {
					c.Close()
				}
			}()
			for i := range next {
				if c == nil {
					var err error
					if c, err = dial(ctx, tg); err != nil {
						results[i] = Result{Request: reqs[i], Err: fmt.Errorf("connect: %w", err)}
						continue
					}
					conns[w]++
				}
				sent := time.Now()
				code, reusable, err := c.do(tg, reqs[i], keepAlive)
				results[i] = Result{Request: reqs[i], Code: code, Err: err, Latency: time.Since(sent)}
				if !keepAlive || !reusable || err != nil {
					c.Close()
					c = nil
				}
			}
		}()
	}
	for i := range reqs {
		select {
		case next <- i:
		case <-ctx.Done():
			results[i] = Result{Request: reqs[i], Err: ctx.Err()}
		}
	}
	close(next)
	wg.Wait()

	t := Tally{Sent: len(reqs), ByCode: map[int]int{}, Elapsed: time.Since(start)}
	for _, n := range conns {
		t.Connections += n
	}
	for _, r := range results {
		if r.Err != nil {
			t.Unanswered = append(t.Unanswered, r)
			continue
		}
		t.Answered++
		t.ByCode[r.Code]++
		if !r.Request.Slow {
			t.Latencies = append(t.Latencies, r.Latency)
		}
	}
	return t
}

type clientConn struct {
	net.Conn
	rd *bufio.Reader
}

func dial(ctx context.Context, tg Target) (*clientConn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var conn net.Conn
	var err error
	if tg.TLS != nil {
		d := &tls.Dialer{Config: tg.TLS}
		conn, err = d.DialContext(ctx, "tcp", tg.Addr)
	} else {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", tg.Addr)
	}
	if err != nil {
		return nil, err
	}
	return &clientConn{Conn: conn, rd: bufio.NewReader(conn)}, nil
}

// do writes one request and reads its answer; reusable says the connection may carry another.
func (c *clientConn) do(tg Target, req Request, keepAlive bool) (code int, reusable bool, err error) {
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	var hdr bytes.Buffer
	fmt.Fprintf(&hdr, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: application/json\r\nContent-Length: %d\r\n",
		req.Method, req.Path, tg.Addr, tg.Token, len(req.Body))
	if req.ContentType != "" {
		fmt.Fprintf(&hdr, "Content-Type: %s\r\n", req.ContentType)
	}
	if !keepAlive {
		hdr.WriteString("Connection: close\r\n")
	}
	hdr.WriteString("\r\n")
	if _, err := c.Write(hdr.Bytes()); err != nil {
		return 0, false, fmt.Errorf("write headers: %w", err)
	}
	parts := [][]byte{req.Body}
	if req.Slow {
		time.Sleep(700 * time.Millisecond)
		parts = [][]byte{req.Body[:len(req.Body)/2], req.Body[len(req.Body)/2:]}
	}
	for _, p := range parts {
		if _, err := c.Write(p); err != nil {
			return 0, false, fmt.Errorf("write body: %w", err)
		}
		if req.Slow {
			time.Sleep(100 * time.Millisecond)
		}
	}
	resp, err := http.ReadResponse(c.rd, nil)
	if err != nil {
		return 0, false, fmt.Errorf("read answer: %w", err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, !resp.Close, nil
}
