package etcdstore

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// EmbeddedConfig says where an in-process etcd keeps its data and listens.
type EmbeddedConfig struct {
	DataDir    string
	ClientURL  string // e.g. http://127.0.0.1:12379
	PeerURL    string // e.g. http://127.0.0.1:12380
	StartAfter time.Duration
}

// Embedded is a running in-process etcd server.
type Embedded struct {
	etcd *embed.Etcd
	URL  string
}

// StartEmbedded starts etcd and waits until it serves or ctx ends.
func StartEmbedded(ctx context.Context, cfg EmbeddedConfig, log *slog.Logger) (*Embedded, error) {
	ec := embed.NewConfig()
	ec.Name = "minik8s"
	ec.Dir = cfg.DataDir
	cu, err := url.Parse(cfg.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client url: %w", err)
	}
	pu, err := url.Parse(cfg.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd peer url: %w", err)
	}
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ec.InitialCluster = ec.Name + "=" + pu.String()
	ec.LogLevel = "error"
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	// The apiserver compacts itself, never past what the outbox has published.
	ec.AutoCompactionRetention = "0"
	ec.QuotaBackendBytes = 8 << 30
	e, err := embed.StartEtcd(ec)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	log.Info("embedded etcd ready", "dataDir", cfg.DataDir, "url", cu.String())
	return &Embedded{etcd: e, URL: cu.String()}, nil
}

// Err reports fatal errors of the running server.
func (e *Embedded) Err() <-chan error { return e.etcd.Err() }

// Client is an in-process client of the embedded server: requests go straight to it, with no
// gRPC transport or loopback socket in between (the server still listens for other clients).
func (e *Embedded) Client() *clientv3.Client { return v3client.New(e.etcd.Server) }

// Close stops the server.
func (e *Embedded) Close() { e.etcd.Close() }

// Dial connects a client to the given endpoints.
func Dial(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
		// Large lists of objects come back in one response.
		MaxCallRecvMsgSize: 256 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("dial etcd %v: %w", endpoints, err)
	}
	return cli, nil
}
