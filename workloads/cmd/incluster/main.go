// Command incluster reaches the API from inside a pod as client-go programs do
// (rest.InClusterConfig) and prints one JSON line per round: how many pods it may list, the
// HTTP status of listing secrets, the token's iat, exp and sub, and the KUBERNETES_* environment;
// image minik8s/incluster.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"minik8s.io/workloads/internal/incluster"
	"minik8s.io/workloads/internal/server"
)

// callTimeout bounds each API call of a round.
const callTimeout = 10 * time.Second

func main() {
	logger := server.Logger("incluster")
	if err := run(); err != nil {
		logger.Error("exit", "err", err)
		os.Exit(1)
	}
}

func run() error {
	settings, err := incluster.ParseSettings(os.Getenv)
	if err != nil {
		return err
	}
	// InClusterConfig names the token file as BearerTokenFile, so client-go's transport
	// re-reads it (at most a minute behind) and a token the kubelet refreshed is used.
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	cfg.UserAgent = "incluster"
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	namespace := ""
	if !settings.AllNamespaces {
		raw, err := os.ReadFile(incluster.NamespaceFile)
		if err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
		namespace = strings.TrimSpace(string(raw))
	}
	p := incluster.Prober{Core: core, Namespace: namespace, TokenFile: incluster.TokenFile, Environ: os.Environ, Now: time.Now, Timeout: callTimeout}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	out := json.NewEncoder(os.Stdout)
	tick := time.NewTicker(settings.Interval)
	defer tick.Stop()
	for {
		if err := out.Encode(p.Round(ctx)); err != nil {
			return fmt.Errorf("write round: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
