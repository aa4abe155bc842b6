package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"minik8s.io/apiserver/internal/audit"
	"minik8s.io/apiserver/internal/authorizer"
	"minik8s.io/shared/testwait"
)

// A handler that panics leaves a Panic stage with a 500 in the audit log, and the
// recoverer still answers.
func TestAuditPanicStage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := audit.NewLog(audit.LogOptions{Path: path}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { log.Close() })
	s := &Server{cfg: Config{Audit: &Audit{Policy: policy, Log: log}, Now: time.Now}, log: slog.New(slog.DiscardHandler)}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	identify := func(c *gin.Context) {
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), identityKey{}, authorizer.User{Name: "jane"}))
	}
	e.GET("/api/v1/namespaces/ns/pods", s.recoverer, identify, s.audit, func(*gin.Context) { panic("boom") })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/ns/pods", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("answer %d, want 500", rec.Code)
	}
	id := rec.Header().Get("Audit-Id")
	testwait.For(t, "the Panic stage in the audit log", func() bool {
		ev, ok := findEvent(t, path, id, audit.StagePanic)
		if ok && (ev.User.Username != "jane" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != http.StatusInternalServerError) {
			t.Fatalf("panic event %+v", ev)
		}
		return ok
	})
	if _, ok := findEvent(t, path, id, audit.StageResponseComplete); ok {
		t.Error("a request that panicked also has a ResponseComplete stage")
	}
}
