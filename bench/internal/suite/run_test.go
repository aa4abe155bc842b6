package suite

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"minik8s.io/shared/bus/amqpbus/amqptest"
)

// TestRunSmall runs every test of the suite at a tiny size against a real
// apiserver, embedded etcd and RabbitMQ, and checks that each produced its
// figures: every create and put measured, every event received both ways.
// It asserts no speed; the figures of a shared test machine mean nothing.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apiserver and needs RabbitMQ; skipped under -short")
	}
	url := amqptest.URL()
	conn, err := amqp.DialConfig(url, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		t.Fatalf("RabbitMQ unreachable at %s (set MINIK8S_AMQP_URL, or run with -short to skip): %v", url, err)
	}
	_ = conn.Close()

	tests := []struct {
		name string
		// access sets the access options of the run.
		access func(*Config)
		// auditUser, when set, must appear in the audit log as the creates' user.
		auditUser string
	}{
		{name: "admin", access: func(*Config) {}},
		{name: "rbac identity with audit", access: func(c *Config) {
			c.AuthorizationMode, c.Identity, c.OtherBindings, c.Audit = ModeNodeRBAC, IdentityRBAC, 20, true
		}, auditUser: `"username":"system:serviceaccount:bench:bench-writer"`},
		{name: "extensions", access: func(c *Config) { c.Extensions = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{
				Workdir: t.TempDir(), AMQPURL: url,
				Creates: 40, Warmup: 5, Block: 10, PayloadBytes: 64,
				Clients: 4, Rounds: 1, RoundTime: 500 * time.Millisecond,
				EventRate: 50, EventTime: time.Second, EventWorkers: 2,
			}
			tt.access(&cfg)
			runSmall(t, cfg)
			if tt.auditUser == "" {
				return
			}
			log, err := os.ReadFile(filepath.Join(cfg.Workdir, "audit.log"))
			if err != nil {
				t.Fatalf("audit log: %v", err)
			}
			if n := bytes.Count(log, []byte(tt.auditUser)); n < cfg.Creates {
				t.Errorf("audit log has %d events with %s, want at least the %d measured creates", n, tt.auditUser, cfg.Creates)
			}
		})
	}
}

// runSmall runs the suite with cfg and checks that every test produced its figures.
func runSmall(t *testing.T, cfg Config) {
	t.Helper()
	var logs bytes.Buffer
	rep, err := Run(t.Context(), cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatalf("Run: %v\nlogs:\n%s", err, logs.String())
	}
	if rep.CreateAPI.N != 40 || rep.CreateEtcd.N != 40 {
		t.Errorf("latency samples = %d API, %d etcd; want 40 each", rep.CreateAPI.N, rep.CreateEtcd.N)
	}
	if rep.ValueBytes <= cfg.PayloadBytes {
		t.Errorf("stored value = %d bytes, want more than the %d-byte payload", rep.ValueBytes, cfg.PayloadBytes)
	}
	if rep.ThroughputOps[0] == 0 || rep.ThroughputOps[1] == 0 || rep.ThroughputAPI <= 0 || rep.ThroughputEtcd <= 0 {
		t.Errorf("throughput = %v (%.0f/s API, %.0f/s etcd), want both measured", rep.ThroughputOps, rep.ThroughputAPI, rep.ThroughputEtcd)
	}
	if rep.EventsSent != 50 {
		t.Errorf("events sent = %d, want 50", rep.EventsSent)
	}
	if rep.EventBus.N != rep.EventsSent || rep.EventWatch.N != rep.EventsSent {
		t.Errorf("events received = %d via RabbitMQ, %d via etcd watch; want all %d", rep.EventBus.N, rep.EventWatch.N, rep.EventsSent)
	}
	if rep.OutboxPublished < rep.EventsSent {
		t.Errorf("outbox published %d changes during the event test, want at least the %d sent", rep.OutboxPublished, rep.EventsSent)
	}
	if cfg.Extensions {
		checkExtensions(t, rep.Extensions)
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{"| 1 create latency", "| 2 throughput, 4 clients", "| 3 event latency", "50/50", "minik8s create"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}
}

// checkExtensions checks that tests 4 to 6 produced their figures; the webhook test may
// instead say that the apiserver does not serve webhooks.
func checkExtensions(t *testing.T, x *ExtensionsReport) {
	t.Helper()
	if x == nil {
		t.Fatal("extension tests asked for, but not reported")
	}
	if x.CreateCustom.N != 40 || x.CreateConfigMap.N != 40 {
		t.Errorf("custom resource latency samples = %d custom, %d ConfigMap; want 40 each", x.CreateCustom.N, x.CreateConfigMap.N)
	}
	if x.CustomBytes == 0 || x.ConfigMapBytes == 0 {
		t.Errorf("stored sizes = %d custom, %d ConfigMap; want both measured", x.CustomBytes, x.ConfigMapBytes)
	}
	if x.ThroughputOps[0] == 0 || x.ThroughputOps[1] == 0 {
		t.Errorf("custom resource throughput = %v, want both measured", x.ThroughputOps)
	}
	switch w := x.Webhook; {
	case w == nil && x.WebhookSkipped == "":
		t.Error("webhook test neither measured nor skipped with a reason")
	case w == nil:
		t.Logf("webhook test not measured: %s", x.WebhookSkipped)
	case w.With.N != 40 || w.Without.N != 40 || w.Calls != 40 || w.Server.N != 40:
		t.Errorf("webhook samples = %d with, %d without, %d reviews (%d timed); want 40 each", w.With.N, w.Without.N, w.Calls, w.Server.N)
	}
}
