package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
	"minik8s.io/shared/informer"
)

// maxAttempts bounds the pods one call is tried on when pods cannot be reached.
const maxAttempts = 3

// maxAnswerBytes bounds a handler's answer the gateway reads.
const maxAnswerBytes = 32 << 20

// Result is a call's answer: the status, body and pod the gateway answers with.
type Result struct {
	Status   int
	Body     []byte
	ServedBy string
}

// CallError is a call that did not return the handler's result: the gateway's answer.
type CallError struct {
	Status int
	// Message is the gateway's error, or the handler's exception ("Type: message").
	Message string
	// Traceback is the tail of the handler's traceback when it raised.
	Traceback string
	ServedBy  string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Call calls namespace/name with the JSON body as POST /function does, for the component's
// own callers (schedules, workflows): the handler's JSON result, or a *CallError.
func (g *Gateway) Call(ctx context.Context, namespace, name string, body []byte) ([]byte, error) {
	res := g.invoke(ctx, namespace, name, body)
	if res.Status == http.StatusOK {
		return res.Body, nil
	}
	ce := &CallError{Status: res.Status, ServedBy: res.ServedBy}
	var re serverlessv1.RuntimeError
	if json.Unmarshal(res.Body, &re) == nil && re.Error != "" {
		ce.Message, ce.Traceback = re.Error, re.Traceback
	} else {
		ce.Message = strings.TrimSpace(string(res.Body))
	}
	return nil, ce
}

// serveFunction serves POST /function/<namespace>/<name>. Errors are JSON bodies of the
// runtime's error shape, {"error": "..."}: 404 unknown function, 400 a body that is not JSON,
// 413 a body too large, 429 queue full, 502 the handler raised (with its traceback) or no pod
// could be reached, 503 the function has no image, 504 timed out.
func (g *Gateway) serveFunction(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/function/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		writeError(w, http.StatusNotFound, "the path is /function/<namespace>/<name>")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "functions are called with POST and a JSON body")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", g.cfg.MaxBodyBytes))
			return
		}
		writeError(w, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	res := g.invoke(r.Context(), parts[0], parts[1], body)
	if res.ServedBy != "" {
		w.Header().Set(serverlessv1.HeaderServedBy, res.ServedBy)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
	g.m.observe(parts[0], parts[1], res.Status, time.Since(start))
}

// invoke runs one call to its answer.
func (g *Gateway) invoke(ctx context.Context, namespace, name string, body []byte) Result {
	key := namespace + "/" + name
	fn, err := g.functions.Get(namespace, name)
	if err != nil && g.waitSynced(ctx) {
		fn, err = g.functions.Get(namespace, name)
	}
	if err != nil {
		return errorResult(http.StatusNotFound, fmt.Sprintf("function %s not found", key))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	} else if !json.Valid(body) {
		return errorResult(http.StatusBadRequest, "request body is not JSON: "+jsonError(body))
	}
	if fn.Status.Image == "" && fn.Status.Phase == "Failed" {
		msg := fmt.Sprintf("function %s has no image to run", key)
		if fn.Status.Build != nil && fn.Status.Build.Message != "" {
			msg += ": " + fn.Status.Build.Message
		}
		return errorResult(http.StatusServiceUnavailable, msg)
	}
	timeout := DefaultTimeout
	if t := fn.Spec.TimeoutSeconds; t != nil && *t > 0 {
		timeout = time.Duration(*t) * time.Second
	}
	limit, maxQueue := 0, DefaultMaxQueue
	if c := fn.Spec.Scale.ContainerConcurrency; c != nil && *c > 0 {
		limit = int(*c)
	}
	if q := fn.Spec.Scale.MaxQueue; q != nil && *q >= 0 {
		maxQueue = int(*q)
	}
	maxReplicas := 0 // unknown: the queue alone bounds the waiting calls
	if m := fn.Spec.Scale.MaxReplicas; m != nil {
		maxReplicas = int(*m)
	}

	if g.cfg.Counter != nil {
		end := g.cfg.Counter.Begin(key)
		defer end()
	}
	p := g.pool(key)
	var tried []string
	for attempt := 1; ; attempt++ {
		wctx, cancel := context.WithTimeout(ctx, max(g.cfg.ColdStartTimeout, timeout))
		waitStart := time.Now()
		b, err := p.acquire(wctx, limit, maxQueue, maxReplicas, tried, func() { g.coldStart(p, namespace, name) })
		cancel()
		switch {
		case errors.Is(err, errQueueFull):
			return errorResult(http.StatusTooManyRequests, fmt.Sprintf("function %s: every pod is at its limit, the function at its largest scale, and the queue is full (maxQueue %d)", key, maxQueue))
		case err != nil && ctx.Err() != nil:
			return errorResult(499, "the caller went away")
		case err != nil:
			return errorResult(http.StatusGatewayTimeout, fmt.Sprintf("function %s: no pod was ready within %s", key, time.Since(waitStart).Round(time.Second)))
		}
		res, err := g.forward(ctx, b, body, timeout)
		p.release(b)
		if err == nil {
			return res
		}
		if ctx.Err() != nil {
			return errorResult(499, "the caller went away")
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return Result{Status: http.StatusGatewayTimeout, ServedBy: b.pod,
				Body: errorBody(fmt.Sprintf("function %s did not answer within %s", key, timeout))}
		}
		g.cfg.Logger.Warn("pod unreachable", "function", key, "pod", b.pod, "attempt", attempt, "err", err)
		g.markDown(p, b)
		tried = append(tried, b.pod)
		if attempt >= maxAttempts || !g.otherPods(p, tried) {
			return errorResult(http.StatusBadGateway, fmt.Sprintf("function %s: pod %s could not be reached: %v", key, b.pod, err))
		}
	}
}

// syncWait bounds how long a call waits for the Functions cache's first list (the gateway just
// started) before an unknown function is a 404.
const syncWait = 15 * time.Second

// waitSynced waits, if the Functions cache has not listed yet, until it has; it reports
// whether it waited and the cache is now synced.
func (g *Gateway) waitSynced(ctx context.Context) bool {
	if g.cfg.Functions.HasSynced() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, syncWait)
	defer cancel()
	return informer.WaitForSync(ctx, g.cfg.Functions.HasSynced)
}

// otherPods reports whether the function has a pod not tried yet that is ready or starting
// (not one that could not be reached).
func (g *Gateway) otherPods(p *pool, tried []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := sets.New(tried...)
	for _, b := range p.order {
		if !t.Has(b.pod) && !b.down {
			return true
		}
	}
	return false
}

// coldStart runs when a call waits with no ready pod: it asks the autoscaler for a pod at
// once, and one goroutine per function asks again every second while calls still wait with
// no ready pod (an activation may come before the function's Deployment exists).
func (g *Gateway) coldStart(p *pool, namespace, name string) {
	g.m.coldStarts.WithLabelValues(namespace, name).Inc()
	if g.cfg.Activator == nil {
		return
	}
	g.cfg.Activator.Activate(namespace, name)
	p.mu.Lock()
	if p.reactivating {
		p.mu.Unlock()
		return
	}
	p.reactivating = true
	p.mu.Unlock()
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-g.baseCtx.Done():
				return
			case <-t.C:
			}
			p.mu.Lock()
			cold := !p.anyReady() && len(p.waiters) > 0
			if !cold {
				p.reactivating = false
			}
			p.mu.Unlock()
			if !cold {
				return
			}
			g.cfg.Activator.Activate(namespace, name)
		}
	}()
}

// forward sends the call to one pod. An error means the pod gave no answer: it could not be
// reached, or timeout passed (context.DeadlineExceeded).
func (g *Gateway) forward(ctx context.Context, b *backend, body []byte, timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	// An empty idempotency key (not sent) lets the transport resend the call on a fresh
	// connection when a kept-alive one turns out closed by the runtime before any answer;
	// without it such a race would fail the call.
	req.Header["X-Idempotency-Key"] = []string{}
	resp, err := g.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		// The pod took the call and broke off: not safe to run it again elsewhere.
		return Result{Status: http.StatusBadGateway, ServedBy: b.pod,
			Body: errorBody(fmt.Sprintf("pod %s broke off its answer: %v", b.pod, err))}, nil
	}
	servedBy := resp.Header.Get(serverlessv1.HeaderServedBy)
	if servedBy == "" {
		servedBy = b.pod
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return Result{Status: http.StatusOK, Body: answer, ServedBy: servedBy}, nil
	case resp.StatusCode == http.StatusInternalServerError && isRuntimeError(answer):
		// The handler raised: its error and traceback go to the caller.
		return Result{Status: http.StatusBadGateway, Body: answer, ServedBy: servedBy}, nil
	case resp.StatusCode == http.StatusBadRequest:
		return Result{Status: http.StatusBadRequest, Body: answer, ServedBy: servedBy}, nil
	default:
		return Result{Status: http.StatusBadGateway, ServedBy: servedBy,
			Body: errorBody(fmt.Sprintf("pod %s answered %d: %s", b.pod, resp.StatusCode, truncate(answer, 512)))}, nil
	}
}

func isRuntimeError(body []byte) bool {
	var re serverlessv1.RuntimeError
	return json.Unmarshal(body, &re) == nil && re.Error != ""
}

func truncate(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func jsonError(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err.Error()
	}
	return "invalid JSON"
}

func errorBody(msg string) []byte {
	b, _ := json.Marshal(serverlessv1.RuntimeError{Error: msg})
	return b
}

func errorResult(status int, msg string) Result {
	return Result{Status: status, Body: errorBody(msg)}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(msg))
}
