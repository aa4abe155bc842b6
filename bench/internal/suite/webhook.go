package suite

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/shared/apierror"
)

// The webhook test's names: the configuration, its one webhook, and the two namespaces whose
// ConfigMap creates are compared, the first selected by webhookLabel.
const (
	webhookConfigName = "bench-validate"
	webhookName       = "configmaps.bench.minik8s.io"
	webhookPath       = "/validate"
	webhookLabel      = "bench.minik8s.io/webhook"
	hookedNamespace   = "bench-hooked"
	plainNamespace    = "bench-plain"
	// webhookMetric is Kubernetes' histogram of each webhook call as the apiserver timed it.
	webhookMetric = "apiserver_admission_webhook_admission_duration_seconds"
)

// ErrWebhooksNotServed is the webhook test's answer from an apiserver without
// admissionregistration.k8s.io: it reports the test as not measured.
var ErrWebhooksNotServed = errors.New("admission webhooks not served")

// webhookTLS makes, at run time, a CA and a serving certificate it signed for 127.0.0.1: the
// apiserver trusts the CA through the configuration's caBundle, as it would a cluster's own.
func webhookTLS() (caPEM []byte, cert tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "minik8s bench webhook CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, cert, fmt.Errorf("webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, cert, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, cert, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, cert, fmt.Errorf("webhook serving certificate: %w", err)
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert, nil
}

// webhookServer allows every AdmissionReview and times its own handling of each.
type webhookServer struct {
	// handled is swapped for a fresh one when the measured creates start.
	handled atomic.Pointer[stats.Recorder]
	calls   atomic.Int64
}

func (s *webhookServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "want an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true},
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&out); err != nil {
		return
	}
	s.calls.Add(1)
	s.handled.Load().Add(time.Since(t0))
}

// startWebhook serves s over HTTPS on a free port of 127.0.0.1 and returns its URL and CA.
func startWebhook(s *webhookServer) (url string, caPEM []byte, stop func(), err error) {
	caPEM, cert, err := webhookTLS()
	if err != nil {
		return "", nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("webhook listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+webhookPath, s)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	stop = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}
	return "https://" + ln.Addr().String() + webhookPath, caPEM, stop, nil
}

// webhookConfig is one validating webhook on ConfigMap creates in namespaces labelled
// webhookLabel, reached by URL.
func webhookConfig(url string, caPEM []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	timeout := int32(5)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: webhookConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         webhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{webhookLabel: "on"}},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
}

// webhookMetricReading is the apiserver's own histogram of our webhook's calls, read before
// and after the measured creates.
func (e *env) webhookMetricReading(ctx context.Context) (h histogram, sum float64, found bool, err error) {
	body, err := e.scrapeMetrics(ctx)
	if err != nil {
		return nil, 0, false, err
	}
	match := map[string]string{"name": webhookName}
	h, err = parseHistogram(body, webhookMetric, match)
	if err != nil {
		return nil, 0, false, nil // the series is absent: reported as such
	}
	sum, _, err = sumSamples(body, webhookMetric+"_sum", match)
	return h, sum, true, err
}

// webhook runs test 6: one-client ConfigMap creates in a namespace that one validating webhook
// watches and in one it does not, alternating blocks. It returns ErrWebhooksNotServed when the
// apiserver does not serve the configuration.
func (e *env) webhook(ctx context.Context, x *ExtensionsReport) error {
	srv := &webhookServer{}
	srv.handled.Store(stats.NewRecorder(e.cfg.Warmup + 100))
	url, caPEM, stop, err := startWebhook(srv)
	if err != nil {
		return err
	}
	defer stop()
	for _, ns := range []struct {
		name   string
		labels map[string]string
	}{{hookedNamespace, map[string]string{webhookLabel: "on"}}, {plainNamespace, nil}} {
		if err := e.ensureNamespace(ctx, ns.name, ns.labels); err != nil {
			return err
		}
	}
	_, err = e.api.Post().AbsPath("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations").Body(webhookConfig(url, caPEM)).Do(ctx)
	if errors.Is(err, apierror.ErrNotFound) {
		e.log.Debug("webhook configuration create", "err", err)
		return fmt.Errorf("%w (404 on the ValidatingWebhookConfiguration create)", ErrWebhooksNotServed)
	}
	if err != nil {
		return fmt.Errorf("create ValidatingWebhookConfiguration: %w", err)
	}
	admin, err := e.proc.Client(10 * time.Second)
	if err != nil {
		return err
	}
	cms := configMaps(admin)
	create := func(ns, name string) (int64, error) {
		cm := e.configMap(name, time.Time{})
		cm.Namespace = ns
		got, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		if err != nil {
			return 0, fmt.Errorf("create configmap %s/%s: %w", ns, name, err)
		}
		return strconv.ParseInt(got.ResourceVersion, 10, 64)
	}

	// The configuration takes effect when the apiserver has seen it: create until a create
	// reaches the webhook.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; srv.calls.Load() == 0; i++ {
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook %s registered, but no create in %s reached it in 30 s", webhookName, hookedNamespace)
		}
		if _, err := create(hookedNamespace, fmt.Sprintf("probe-%d", i)); err != nil {
			return err
		}
	}
	cfg := e.cfg
	for i := range cfg.Warmup {
		if _, err := create(hookedNamespace, fmt.Sprintf("warm-%d", i)); err != nil {
			return err
		}
		if _, err := create(plainNamespace, fmt.Sprintf("warm-%d", i)); err != nil {
			return err
		}
	}
	before, beforeSum, found, err := e.webhookMetricReading(ctx)
	if err != nil {
		return err
	}
	callsBefore := srv.calls.Load()
	srv.handled.Store(stats.NewRecorder(cfg.Creates))
	with, without := stats.NewRecorder(cfg.Creates), stats.NewRecorder(cfg.Creates)
	for start := 0; start < cfg.Creates; start += cfg.Block {
		end := min(start+cfg.Block, cfg.Creates)
		for _, side := range []struct {
			ns  string
			rec *stats.Recorder
		}{{hookedNamespace, with}, {plainNamespace, without}} {
			var last int64
			for i := start; i < end; i++ {
				t0 := time.Now()
				rev, err := create(side.ns, fmt.Sprintf("lat-%d", i))
				if err != nil {
					return err
				}
				side.rec.Add(time.Since(t0))
				last = rev
			}
			if err := e.waitOutbox(ctx, last); err != nil {
				return err
			}
		}
	}
	x.Webhook = &WebhookReport{
		With: with.Summary(), Without: without.Summary(), Server: srv.handled.Load().Summary(),
		Calls: int(srv.calls.Load() - callsBefore),
	}
	if found {
		after, afterSum, ok, err := e.webhookMetricReading(ctx)
		if err != nil {
			return err
		}
		if ok {
			d := after.since(before)
			x.Webhook.MetricCalls = int(d.total())
			x.Webhook.MetricP50, x.Webhook.MetricP99 = d.quantile(50), d.quantile(99)
			if n := d.total(); n > 0 {
				x.Webhook.MetricMean = time.Duration((afterSum - beforeSum) / n * float64(time.Second))
			}
		}
	}
	e.log.Info("webhook create latency", "with", x.Webhook.With.String(), "without", x.Webhook.Without.String(), "server", x.Webhook.Server.String())
	return nil
}
