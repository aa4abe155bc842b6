package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	serverlessv1 "minik8s.io/shared/apis/serverless/v1"
)

// GatewayClient reaches the serverless gateway, which runs functions and workflows for the
// invoke subresource.
type GatewayClient struct {
	// URL is the gateway's base, e.g. http://127.0.0.1:8090.
	URL *url.URL
	// HTTP carries the calls; its transport bounds dialing, the caller's request bounds the rest.
	HTTP *http.Client
}

// DefaultGatewayDialTimeout bounds reaching the serverless gateway. A call itself may take as
// long as the function's timeout plus a cold start, which the gateway bounds (504).
const DefaultGatewayDialTimeout = 5 * time.Second

// invokeResponseHeaders are the gateway's headers passed back to the caller: the answer's type,
// the pod that served it, and when to try again after a 429.
var invokeResponseHeaders = []string{"Content-Type", serverlessv1.HeaderServedBy, "Retry-After", workflowExecutionHeader}

// workflowExecutionHeader names the WorkflowExecution of a workflow call (the gateway sets it).
const workflowExecutionHeader = "X-Workflow-Execution"

// invoke proxies POST functions/<name>/invoke and workflows/<name>/invoke to the gateway's
// POST /function/<ns>/<name> or /workflow/<ns>/<name>, once the object is known to exist, and
// answers with what the gateway answered.
func (s *Server) invoke(c *gin.Context, t target) {
	ctx := c.Request.Context()
	if _, _, err := s.reg.Read(ctx, target{res: t.res, namespace: t.namespace, name: t.name}.key()); err != nil {
		writeError(c, err)
		return
	}
	gw := s.cfg.Gateway
	if gw == nil || gw.URL == nil {
		writeError(c, apierror.New(apierror.ErrUnavailable, "the serverless gateway is not configured on this apiserver (--serverless-gateway-url)"))
		return
	}
	body, err := readLimited(c)
	if err != nil {
		writeError(c, err)
		return
	}
	kind := "function"
	if t.res.Plural == "workflows" {
		kind = "workflow"
	}
	u := gw.URL.JoinPath(kind, t.namespace, t.name)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		writeError(c, apierror.New(apierror.ErrInternal, "build the gateway request: %v", err))
		return
	}
	ct := c.GetHeader("Content-Type")
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	client := gw.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// The caller went away; nobody reads an answer.
			c.Abort()
			return
		}
		writeError(c, apierror.New(apierror.ErrUnavailable, "cannot reach the serverless gateway at %s: %v", gw.URL.Redacted(), unwrapURLError(err)))
		return
	}
	defer resp.Body.Close()
	for _, h := range invokeResponseHeaders {
		if v := resp.Header.Get(h); v != "" {
			c.Header(h, v)
		}
	}
	if resp.StatusCode >= 400 {
		// A refusal reaches API clients as a Status, the error shape every Kubernetes client
		// prints (the real kubectl shows only "unknown" for any other body).
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxGatewayError))
		st := gatewayStatus(resp.StatusCode, kind, t.namespace, t.name, answer)
		c.Set(statusKey, int(st.Code))
		writeJSON(c, int(st.Code), st)
		return
	}
	c.Status(resp.StatusCode)
	_, _ = io.Copy(c.Writer, resp.Body)
}

// maxGatewayError bounds how much of a gateway's error answer becomes the Status's message.
const maxGatewayError = 64 << 10

// gatewayError is the part of the gateway's error body a Status carries: its own refusals have
// only error; a handler's exception adds the traceback; a failed workflow's error already names
// its execution and the first line of the cause, the traceback holds the rest.
type gatewayError struct {
	Error     string `json:"error"`
	Traceback string `json:"traceback,omitempty"`
}

// gatewayStatus turns a gateway's error answer into a Status with the same code, the reason
// Kubernetes gives that code, and a message holding the whole error: the exception, the
// execution of a workflow, and the traceback's tail on the lines after.
func gatewayStatus(code int, kind, namespace, name string, body []byte) *metav1.Status {
	var ge gatewayError
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &ge) == nil && ge.Error != "" {
		msg = ge.Error
		if ge.Traceback != "" {
			msg += "\n" + strings.TrimRight(ge.Traceback, "\n")
		}
	}
	if msg == "" {
		msg = http.StatusText(code)
	}
	reason := metav1.StatusReasonUnknown
	switch code {
	case http.StatusBadRequest:
		reason = metav1.StatusReasonBadRequest
	case http.StatusNotFound:
		reason = metav1.StatusReasonNotFound
	case http.StatusUnprocessableEntity:
		reason = metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		reason = metav1.StatusReasonTooManyRequests
	case http.StatusGatewayTimeout:
		reason = metav1.StatusReasonTimeout
	case http.StatusServiceUnavailable:
		reason = metav1.StatusReasonServiceUnavailable
	case http.StatusInternalServerError:
		reason = metav1.StatusReasonInternalError
	}
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reason,
		Message:  fmt.Sprintf("%s %s/%s: %s", kind, namespace, name, msg),
		Details:  &metav1.StatusDetails{Name: name, Group: serverlessv1.GroupName, Kind: kind + "s"},
	}
}

// unwrapURLError drops net/http's "Post <url>:" prefix, which repeats the gateway's address.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
