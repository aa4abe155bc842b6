package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/shared/apierror"
	"minik8s.io/shared/scheme"
)

const defaultTimeout = 30 * time.Second

// maxErrorBody caps how much of an error response is read; Status objects are small.
const maxErrorBody = 1 << 20

// Client sends requests to one apiserver. It is safe for concurrent use and keeps connections
// alive between requests.
type Client struct {
	base      *url.URL
	http      *http.Client
	token     string
	userAgent string
	timeout   time.Duration
	imp       Impersonation
	limiter   *limiter
	log       *slog.Logger
}

// New builds a Client. It does no I/O.
func New(cfg *Config) (*Client, error) {
	if cfg.Server == "" {
		return nil, errors.New("client config: server is empty")
	}
	base, err := url.Parse(strings.TrimRight(cfg.Server, "/"))
	if err != nil {
		return nil, fmt.Errorf("client config: server %q: %w", cfg.Server, err)
	}
	if base.Scheme != "https" && base.Scheme != "http" {
		return nil, fmt.Errorf("client config: server %q: scheme must be https or http", cfg.Server)
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.TLSServerName, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when the user asks
	if len(cfg.CAData) > 0 && !cfg.Insecure {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CAData) {
			return nil, errors.New("client config: certificate authority data holds no PEM certificate")
		}
		tlsCfg.RootCAs = pool
	}
	transport := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     tlsCfg,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        100,
		// Controllers talk to one host; keep enough idle connections for their workers.
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
	}
	c := &Client{
		base:      base,
		http:      &http.Client{Transport: transport}, // no overall timeout: watches stream
		token:     cfg.Token,
		userAgent: cfg.UserAgent,
		timeout:   cfg.Timeout,
		imp:       cfg.Impersonate,
		log:       slog.Default(),
	}
	if c.userAgent == "" {
		c.userAgent = "minik8s"
	}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	if cfg.QPS > 0 {
		c.limiter = newLimiter(cfg.QPS, cfg.Burst)
	}
	return c, nil
}

// WithLogger returns a copy of c that logs requests at Debug level to log.
func (c *Client) WithLogger(log *slog.Logger) *Client {
	cp := *c
	cp.log = log
	return &cp
}

// Server is the base URL requests go to.
func (c *Client) Server() string { return c.base.String() }

// ResourcePath is the URL path of a resource collection, an object, or one of its
// subresources. An empty namespace on a namespaced resource addresses all namespaces, which is
// only valid for collections.
func ResourcePath(res *scheme.Resource, namespace, name string, subresource ...string) (string, error) {
	var b strings.Builder
	if res.GVK.Group == "" {
		b.WriteString("/api/" + res.GVK.Version)
	} else {
		b.WriteString("/apis/" + res.GVK.Group + "/" + res.GVK.Version)
	}
	if res.Namespaced && namespace != "" {
		b.WriteString("/namespaces/" + url.PathEscape(namespace))
	}
	if res.Namespaced && namespace == "" && name != "" {
		return "", fmt.Errorf("%s %q: a namespace is required", res.Plural, name)
	}
	b.WriteString("/" + res.Plural)
	if name != "" {
		b.WriteString("/" + url.PathEscape(name))
	}
	for _, s := range subresource {
		if s == "" {
			continue
		}
		if name == "" {
			return "", fmt.Errorf("%s/%s: a name is required", res.Plural, s)
		}
		b.WriteString("/" + s)
	}
	return b.String(), nil
}

// Request is one call being built: Client.Verb, then path, query and body, then Do, Into,
// Stream or Watch.
type Request struct {
	c           *Client
	verb        string
	path        string
	query       url.Values
	body        []byte
	contentType string
	accept      string
	err         error
}

// Verb starts a request with an HTTP method.
func (c *Client) Verb(verb string) *Request {
	return &Request{c: c, verb: verb, query: url.Values{}, accept: "application/json"}
}

// Get, Post, Put, Patch and Delete start requests with those methods.
func (c *Client) Get() *Request    { return c.Verb(http.MethodGet) }
func (c *Client) Post() *Request   { return c.Verb(http.MethodPost) }
func (c *Client) Put() *Request    { return c.Verb(http.MethodPut) }
func (c *Client) Delete() *Request { return c.Verb(http.MethodDelete) }

// Patch starts a PATCH whose body has the content type pt.
func (c *Client) Patch(pt string) *Request {
	r := c.Verb(http.MethodPatch)
	r.contentType = pt
	return r
}

// Resource addresses a resource, object or subresource (see ResourcePath).
func (r *Request) Resource(res *scheme.Resource, namespace, name string, subresource ...string) *Request {
	p, err := ResourcePath(res, namespace, name, subresource...)
	if err != nil && r.err == nil {
		r.err = err
	}
	r.path = p
	return r
}

// AbsPath addresses a raw path such as /version or /apis.
func (r *Request) AbsPath(p string) *Request {
	r.path = p
	return r
}

// Param adds a query parameter; empty values are left out.
func (r *Request) Param(key, value string) *Request {
	if value != "" {
		r.query.Add(key, value)
	}
	return r
}

// Params adds several query parameters.
func (r *Request) Params(v url.Values) *Request {
	for k, vs := range v {
		for _, s := range vs {
			r.query.Add(k, s)
		}
	}
	return r
}

// Accept sets the Accept header, e.g. to ask for a Table.
func (r *Request) Accept(accept string) *Request {
	r.accept = accept
	return r
}

// Body sets the request body: raw bytes are sent as they are, anything else as JSON.
func (r *Request) Body(obj any) *Request {
	switch b := obj.(type) {
	case []byte:
		r.body = b
	default:
		data, err := scheme.MarshalJSON(obj)
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("encode request body: %w", err)
		}
		r.body = data
	}
	if r.contentType == "" {
		r.contentType = "application/json"
	}
	return r
}

// URL is where the request goes.
func (r *Request) URL() *url.URL {
	u := *r.c.base
	u.Path = strings.TrimRight(u.Path, "/") + r.path
	u.RawQuery = r.query.Encode()
	return &u
}

func (r *Request) send(ctx context.Context) (*http.Response, error) {
	resp, err := r.Raw(ctx)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, decodeError(resp.StatusCode, data)
	}
	return resp, nil
}

// Raw sends the request without the client's timeout (ctx bounds it) and returns the response
// whatever its status: for answers proxied from elsewhere, such as a function's invoke, whose
// errors are not Statuses. The caller closes the body.
func (r *Request) Raw(ctx context.Context) (*http.Response, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.c.limiter != nil {
		if err := r.c.limiter.wait(ctx); err != nil {
			return nil, err
		}
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	u := r.URL()
	req, err := http.NewRequestWithContext(ctx, r.verb, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if r.contentType != "" && r.body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	req.Header.Set("Accept", r.accept)
	req.Header.Set("User-Agent", r.c.userAgent)
	if r.c.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.c.token)
	}
	r.c.imp.setHeaders(req.Header)
	start := time.Now()
	resp, err := r.c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", r.verb, u.Path, err)
	}
	if r.c.log.Enabled(ctx, slog.LevelDebug) { // the URL's string is not free, and this is every request
		r.c.log.Debug("api request", "verb", r.verb, "url", u.String(), "status", resp.StatusCode, "duration", time.Since(start))
	}
	return resp, nil
}

// Do sends the request, bounded by the client's timeout, and returns the response body.
func (r *Request) Do(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.c.timeout)
	defer cancel()
	resp, err := r.send(ctx)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read response: %w", r.verb, r.path, err)
	}
	return data, nil
}

// Into sends the request and decodes the JSON response into out.
func (r *Request) Into(ctx context.Context, out any) error {
	data, err := r.Do(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", r.verb, r.path, err)
	}
	return nil
}

// Stream sends the request without the client's timeout and returns the open response body,
// for logs and watches; the caller closes it, and ctx ending aborts it.
func (r *Request) Stream(ctx context.Context) (io.ReadCloser, error) {
	resp, err := r.send(ctx)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// decodeError turns a non-2xx response into an *apierror.Error. The apiserver answers with a
// Status; anything else (a proxy's HTML page, plain text) is mapped by its HTTP code.
func decodeError(code int, body []byte) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) == nil && st.Kind == "Status" {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		return apierror.FromStatus(&st)
	}
	st = metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(code),
		Reason:   reasonForCode(code),
		Message:  messageForCode(code, body),
	}
	return apierror.FromStatus(&st)
}

func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusUnauthorized:
		return metav1.StatusReasonUnauthorized
	case http.StatusForbidden:
		return metav1.StatusReasonForbidden
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusRequestEntityTooLarge:
		return metav1.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	}
	if code >= 500 {
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}

// messageForCode words non-Status errors the way kubectl does.
func messageForCode(code int, body []byte) string {
	text := strings.TrimSpace(string(body))
	if len(text) > 200 || strings.HasPrefix(text, "<") {
		text = ""
	}
	switch code {
	case http.StatusNotFound:
		return "the server could not find the requested resource"
	case http.StatusUnauthorized:
		return "the server has asked for the client to provide credentials"
	case http.StatusForbidden:
		return "the server does not allow access to the requested resource"
	}
	if text != "" {
		return text
	}
	return fmt.Sprintf("the server responded with status %d (%s)", code, http.StatusText(code))
}
