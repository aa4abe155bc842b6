package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"minik8s.io/apiserver/internal/audit"
	"minik8s.io/apiserver/internal/authorizer"
)

// Audit is what the server records requests with.
type Audit struct {
	Policy *audit.Policy
	Log    *audit.Log
}

// maxAuditBody bounds a body kept at Request or RequestResponse level.
const maxAuditBody = 64 << 10

// audit records an authenticated request as its policy says: RequestReceived, ResponseStarted
// for long-running requests (watches, logs, streams, proxies), then ResponseComplete, with the
// authorization decision as annotations. Every answer carries its Audit-Id.
func (s *Server) audit(c *gin.Context) {
	if s.cfg.Audit == nil {
		c.Next()
		return
	}
	now := s.cfg.Now()
	id, _ := IdentityFrom(c.Request.Context())
	a, err := authorizer.Parse(c.Request)
	if err != nil {
		c.Next()
		return
	}
	d := s.cfg.Audit.Policy.Evaluate(audit.Attributes{User: id.Name, Groups: id.Groups, Verb: a.Verb,
		ResourceRequest: a.ResourceRequest, Path: a.Path, APIGroup: a.APIGroup, Namespace: a.Namespace,
		Resource: a.Resource, Subresource: a.Subresource, Name: a.Name})
	auditID := requestAuditID(c.Request)
	c.Header("Audit-Id", auditID)
	if d.Level == audit.LevelNone {
		c.Next()
		return
	}
	ev := &audit.Event{
		TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: audit.GroupVersion},
		Level:    d.Level, AuditID: ktypes.UID(auditID), RequestURI: c.Request.RequestURI, Verb: a.Verb,
		User:      userInfo(id),
		SourceIPs: sourceIPs(c.Request), UserAgent: c.Request.UserAgent(),
		RequestReceivedTimestamp: metav1.NewMicroTime(now),
	}
	if a.ResourceRequest {
		ev.ObjectRef = &audit.ObjectReference{Resource: a.Resource, Namespace: a.Namespace, Name: a.Name,
			APIGroup: a.APIGroup, APIVersion: a.APIVersion, Subresource: a.Subresource}
	}
	// The body of a stream (a proxied request, an exec) is the backend's, and waiting for
	// it would hold the stream up.
	if !d.Level.Less(audit.LevelRequest) && c.Request.Body != nil && isWrite(a.Verb) && !longRunning(a) {
		body, _ := io.ReadAll(io.LimitReader(c.Request.Body, maxAuditBody+1))
		c.Request.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), c.Request.Body), c.Request.Body}
		if len(body) <= maxAuditBody && json.Valid(body) {
			ev.RequestObject = body
		}
	}
	emit := func(stage audit.Stage) {
		if slices.Contains(d.OmitStages, stage) {
			return
		}
		e := *ev
		e.Stage, e.StageTimestamp = stage, metav1.NewMicroTime(s.cfg.Now())
		s.cfg.Audit.Log.Write(&e)
	}
	emit(audit.StageRequestReceived)
	w := &auditWriter{ResponseWriter: c.Writer, keep: d.Level == audit.LevelRequestResponse && !longRunning(a)}
	if longRunning(a) {
		w.started = func() { emit(audit.StageResponseStarted) }
	}
	c.Writer = w
	defer func() {
		// A handler that panics gets a Panic stage, as Kubernetes records it, and the
		// recoverer outside answers 500.
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r) // a stream whose client went away
			}
			ev.ResponseStatus = &metav1.Status{Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
				Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("APIServer panic'd: %v", r)}
			emit(audit.StagePanic)
			panic(r)
		}
	}()
	c.Next()
	if u, ok := IdentityFrom(c.Request.Context()); ok && u.Name != id.Name {
		imp := userInfo(u)
		ev.ImpersonatedUser = &imp
	}
	if dec, ok := c.Get(decisionKey); ok {
		ev.Annotations = map[string]string{"authorization.k8s.io/decision": dec.(string)}
		if r, _ := c.Get(reasonKey); r != nil && r.(string) != "" {
			ev.Annotations["authorization.k8s.io/reason"] = r.(string)
		}
	}
	code := c.Writer.Status()
	ev.ResponseStatus = &metav1.Status{Code: int32(code)}
	if code >= 300 {
		var st metav1.Status
		if json.Unmarshal(w.body.Bytes(), &st) == nil && st.Kind == "Status" {
			ev.ResponseStatus.Status, ev.ResponseStatus.Reason, ev.ResponseStatus.Message = st.Status, st.Reason, st.Message
		}
		ev.ResponseStatus.Status = metav1.StatusFailure
	}
	if w.keep && w.body.Len() > 0 && w.body.Len() <= maxAuditBody && json.Valid(w.body.Bytes()) {
		ev.ResponseObject = slices.Clone(w.body.Bytes())
	}
	emit(audit.StageResponseComplete)
}

// maxAuditIDLength bounds an Audit-ID a client sends.
const maxAuditIDLength = 128

// requestAuditID is the client's Audit-ID when it sent one, as Kubernetes keeps it so that a
// client can follow its request through the log, else a new UUID.
func requestAuditID(r *http.Request) string {
	if id := strings.TrimSpace(r.Header.Get("Audit-ID")); id != "" && len(id) <= maxAuditIDLength {
		return id
	}
	return string(uuid.NewUUID())
}

func isWrite(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// longRunning: requests whose answer streams, as Kubernetes' long-running check names them.
func longRunning(a authorizer.Attributes) bool {
	if a.Verb == "watch" {
		return true
	}
	switch a.Subresource {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return false
}

func userInfo(u authorizer.User) authnv1.UserInfo {
	return authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra(u.Extra)}
}

// sourceIPs: X-Forwarded-For's addresses, then X-Real-Ip, then the peer, as Kubernetes lists
// them.
func sourceIPs(r *http.Request) []string {
	var ips []string
	for _, h := range strings.Split(r.Header.Get("X-Forwarded-For"), ",") {
		if ip := strings.TrimSpace(h); net.ParseIP(ip) != nil {
			ips = append(ips, ip)
		}
	}
	if ip := strings.TrimSpace(r.Header.Get("X-Real-Ip")); net.ParseIP(ip) != nil && !slices.Contains(ips, ip) {
		ips = append(ips, ip)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil && !slices.Contains(ips, host) {
		ips = append(ips, host)
	}
	return ips
}

// auditWriter notices the first byte of a long-running answer, and keeps the answer of a
// failed or RequestResponse-level request (bounded). Flush and Hijack pass through the
// embedded writer, so watches and streams work as before.
type auditWriter struct {
	gin.ResponseWriter
	keep    bool
	started func()
	body    bytes.Buffer
}

func (w *auditWriter) WriteHeader(code int) {
	w.start()
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	w.start()
	if (w.keep || w.ResponseWriter.Status() >= 300) && w.body.Len() <= maxAuditBody {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Unwrap gives http.ResponseController the writer underneath (a proxy's full duplex).
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *auditWriter) start() {
	if w.started != nil {
		f := w.started
		w.started = nil
		f()
	}
}
