// Package webhooktest runs admission webhooks for tests: an HTTPS server with its own CA that
// answers AdmissionReviews with what a test's function decides.
package webhooktest

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"minik8s.io/shared/pki"
)

// Decide answers one admission request; the server fills in the uid and the review's type.
type Decide func(r *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// Server is a running webhook.
type Server struct {
	// URL is https://127.0.0.1:port; CABundle verifies it, and the DNS names it was made for.
	URL      string
	CABundle []byte

	mu       sync.Mutex
	requests []*admissionv1.AdmissionRequest
}

// Start serves decide over HTTPS with a certificate for 127.0.0.1 and dnsNames, until the
// test ends.
func Start(t testing.TB, decide Decide, dnsNames ...string) *Server {
	t.Helper()
	ca, err := pki.NewCA("webhooktest-ca", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	kp, err := pki.NewServing(ca, "webhook", append([]string{"127.0.0.1"}, dnsNames...), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := kp.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.CertPEM(), keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{CABundle: ca.CertPEM()}
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, review.Request)
		s.mu.Unlock()
		resp := decide(r, review.Request)
		if resp == nil {
			return
		}
		resp.UID = review.Request.UID
		review.Request, review.Response = nil, resp
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&review)
	}))
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// Requests are the admission requests received so far.
func (s *Server) Requests() []*admissionv1.AdmissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), s.requests...)
}

// Allow lets every write through.
func Allow(*http.Request, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}
