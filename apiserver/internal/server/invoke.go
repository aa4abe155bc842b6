package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"

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
	c.Status(resp.StatusCode)
	_, _ = io.Copy(c.Writer, resp.Body)
}

// unwrapURLError drops net/http's "Post <url>:" prefix, which repeats the gateway's address.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
