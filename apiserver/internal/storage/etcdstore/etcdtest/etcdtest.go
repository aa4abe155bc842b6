package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/apiserver/internal/storage/etcdstore"
)

const (
	// attempts bounds the tries with new ports; a port taken between the check and etcd's bind
	// is rare, several in a row means something else is wrong.
	attempts = 5
	// startTimeout is generous: it only decides how long a broken start takes to fail.
	startTimeout = 60 * time.Second
	// requestTimeout is what Store gives each request, as the apiserver does.
	requestTimeout = 10 * time.Second
)

// Etcd is a running embedded etcd and a client connected to it over its client URL.
type Etcd struct {
	Client *clientv3.Client
	Store  *etcdstore.Store
	// URL is the client URL, for processes and clients of their own.
	URL string

	emb *etcdstore.Embedded
	dir string
}

// Start runs an etcd for t and stops it when t's cleanups run. It fails t, saying why, when
// etcd cannot start.
func Start(t testing.TB) *Etcd {
	t.Helper()
	e, err := New(t.Context())
	if err != nil {
		t.Fatalf("embedded etcd did not start: %v", err)
	}
	t.Cleanup(e.Close)
	return e
}

// New runs an etcd with its data in a new temporary directory, for a TestMain, which has no
// testing.TB. The caller must Close it.
func New(ctx context.Context) (*Etcd, error) {
	dir, err := os.MkdirTemp("", "minik8s-etcdtest-")
	if err != nil {
		return nil, fmt.Errorf("etcd data dir: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	emb, err := startEmbedded(ctx, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	cli, err := etcdstore.Dial([]string{emb.URL})
	if err != nil {
		emb.Close()
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Etcd{Client: cli, Store: etcdstore.New(cli, requestTimeout), URL: emb.URL, emb: emb, dir: dir}, nil
}

// Close closes the client, stops etcd and removes its data.
func (e *Etcd) Close() {
	_ = e.Client.Close()
	e.emb.Close()
	_ = os.RemoveAll(e.dir)
}

// startEmbedded starts etcd on free ports, trying new ones when one was taken before etcd bound
// it. Every try gets its own data directory, so a failed one leaves nothing to the next.
func startEmbedded(ctx context.Context, dir string) (*etcdstore.Embedded, error) {
	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(2)
		if err != nil {
			return nil, err
		}
		emb, err := etcdstore.StartEmbedded(ctx, etcdstore.EmbeddedConfig{
			DataDir:   filepath.Join(dir, strconv.Itoa(attempt)),
			ClientURL: "http://" + ports[0],
			PeerURL:   "http://" + ports[1],
		}, slog.New(slog.DiscardHandler))
		if err == nil {
			return emb, nil
		}
		if !addrInUse(err) || attempt == attempts {
			return nil, fmt.Errorf("attempt %d: %w", attempt, err)
		}
	}
}

// pickPorts picks the ports of a try; a test replaces it to hand out a taken one.
var pickPorts = freePorts

// freePorts returns n distinct loopback addresses that were free a moment ago. The listeners
// stay open until all are picked, so the kernel cannot hand out one port twice.
func freePorts(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

// addrInUse tells a port taken by someone else, which etcd does not always wrap.
func addrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}
