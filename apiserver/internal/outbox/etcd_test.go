package outbox

import (
	"errors"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd runs an in-process etcd in a temp dir on free loopback ports and
// returns a client to it; both are closed at cleanup.
func startEtcd(t testing.TB) *clientv3.Client {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "outbox-test"
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "error"
	// A port found free can be taken before etcd binds it (by another test process's
	// connection, say): try again with new ports, a few times.
	var e *embed.Etcd
	var client url.URL
	for attempt := 1; ; attempt++ {
		var peer url.URL
		client, peer = freeURL(t), freeURL(t)
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		var err error
		if e, err = embed.StartEtcd(cfg); err == nil {
			break
		}
		inUse := errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
		if !inUse || attempt == 5 {
			t.Fatalf("start embedded etcd: %v", err)
		}
		t.Logf("start embedded etcd, attempt %d: %v; trying other ports", attempt, err)
		cfg.Dir = t.TempDir()
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("embedded etcd not ready after 60s")
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{client.String()}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find free port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, nil))
}
