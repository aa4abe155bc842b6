// Command echo-operator runs the EchoApp controller and its admission webhooks in one
// controller-runtime manager, with leader election on a Lease, metrics and health probes.
// Its flags are those kubebuilder scaffolds.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	demov1 "minik8s.io/test/operator/api/v1"
	"minik8s.io/test/operator/internal/controller"
	echowebhook "minik8s.io/test/operator/internal/webhook"
)

// config is what the flags say.
type config struct {
	metricsAddr      string
	metricsSecure    bool
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	webhookPort      int
	webhookCertPath  string
	webhookCertName  string
	webhookKeyName   string
	enableHTTP2      bool
	logLevel         slog.Level
}

func main() {
	var cfg config
	flag.StringVar(&cfg.metricsAddr, "metrics-bind-address", ":8080", `address the metrics endpoint binds to ("0" turns it off)`)
	flag.BoolVar(&cfg.metricsSecure, "metrics-secure", false, "serve metrics over HTTPS with the webhook's kind of self-signed certificate")
	flag.StringVar(&cfg.probeAddr, "health-probe-bind-address", ":8081", "address /healthz and /readyz bind to")
	flag.BoolVar(&cfg.leaderElect, "leader-elect", false, "elect a leader on a Lease, so only one replica reconciles")
	flag.StringVar(&cfg.leaderElectionNS, "leader-election-namespace", "", "namespace of the Lease (default: the pod's own)")
	flag.IntVar(&cfg.webhookPort, "webhook-port", 9443, "port the admission webhooks are served on over TLS")
	flag.StringVar(&cfg.webhookCertPath, "webhook-cert-path", "/tmp/k8s-webhook-server/serving-certs", "directory holding the webhook's certificate and key")
	flag.StringVar(&cfg.webhookCertName, "webhook-cert-name", "tls.crt", "certificate file in --webhook-cert-path")
	flag.StringVar(&cfg.webhookKeyName, "webhook-cert-key", "tls.key", "key file in --webhook-cert-path")
	flag.BoolVar(&cfg.enableHTTP2, "enable-http2", false, "serve HTTP/2 on the webhook and metrics servers (off: CVE-2023-44487 and CVE-2023-39325)")
	flag.TextVar(&cfg.logLevel, "log-level", slog.LevelInfo, "debug, info, warn or error")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, logger); err != nil {
		logger.Error("echo-operator failed", "err", err)
		stop()
		os.Exit(1)
	}
}

// run starts the manager and blocks until ctx ends or a part fails.
func run(ctx context.Context, cfg config, logger *slog.Logger) error {
	if cfg.webhookPort <= 0 || cfg.webhookPort > 65535 {
		return fmt.Errorf("--webhook-port %d is not a port", cfg.webhookPort)
	}
	if _, err := os.Stat(cfg.webhookCertPath); err != nil {
		return fmt.Errorf("webhook certificates: %w", err)
	}
	// controller-runtime and client-go log through logr and klog: both go to slog.
	lr := logr.FromSlogHandler(logger.Handler())
	ctrl.SetLogger(lr)
	klog.SetLogger(lr)

	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), demov1.AddToScheme(scheme)); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	var tlsOpts []func(*tls.Config)
	if !cfg.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	restConfig, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme,
		Metrics: metricsserver.Options{
			BindAddress: cfg.metricsAddr, SecureServing: cfg.metricsSecure, TLSOpts: tlsOpts,
		},
		WebhookServer: webhook.NewServer(webhook.Options{
			Port: cfg.webhookPort, CertDir: cfg.webhookCertPath, CertName: cfg.webhookCertName,
			KeyName: cfg.webhookKeyName, TLSOpts: tlsOpts,
		}),
		HealthProbeBindAddress:  cfg.probeAddr,
		LeaderElection:          cfg.leaderElect,
		LeaderElectionID:        "echo-operator.demo.minik8s.io",
		LeaderElectionNamespace: cfg.leaderElectionNS,
		// The old leader steps down at once on SIGTERM, so a new pod takes over without
		// waiting for the Lease to run out; safe because run returns right after.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	r := &controller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("echo-operator")}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if err := echowebhook.Setup(mgr); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	// Ready once the webhook server answers TLS: the Service sends admission requests only to
	// ready pods, and failurePolicy Fail would refuse EchoApps meanwhile.
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return fmt.Errorf("readyz: %w", err)
	}
	logger.Info("starting", "component", "echo-operator", "webhookPort", cfg.webhookPort, "leaderElect", cfg.leaderElect)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	logger.Info("stopped", "component", "echo-operator")
	return nil
}
