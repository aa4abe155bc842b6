package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/apiserver/internal/storage"
)

// Latency is the etcd request latency per operation, registered by the apiserver.
var Latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "etcd_request_duration_seconds",
	Help:    "Latency of etcd requests made by the apiserver, by operation.",
	Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
}, []string{"operation"})

// Store is storage.Interface on an etcd client.
type Store struct {
	cli     *clientv3.Client
	timeout time.Duration
}

// New wraps a connected client. Every call gets timeout unless ctx ends sooner.
func New(cli *clientv3.Client, timeout time.Duration) *Store {
	return &Store{cli: cli, timeout: timeout}
}

func (s *Store) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

func observe(op string, start time.Time) {
	Latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
}

func toKV(kv *mvccpb.KeyValue) storage.KV {
	return storage.KV{Key: string(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
}

func mapErr(err error) error {
	if errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, rpctypes.ErrGRPCCompacted) {
		return fmt.Errorf("%w: %v", storage.ErrCompacted, err)
	}
	return err
}

// Get implements storage.Interface.
func (s *Store) Get(ctx context.Context, key string) (storage.KV, error) {
	defer observe("get", time.Now())
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Get(ctx, key)
	if err != nil {
		return storage.KV{}, mapErr(err)
	}
	if len(resp.Kvs) == 0 {
		return storage.KV{}, storage.ErrKeyNotFound
	}
	return toKV(resp.Kvs[0]), nil
}

// List implements storage.Interface.
func (s *Store) List(ctx context.Context, prefix, from string, limit, rev int64) (storage.ListResult, error) {
	defer observe("list", time.Now())
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if from == "" {
		from = prefix
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(prefix))}
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(limit))
	}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := s.cli.Get(ctx, from, opts...)
	if err != nil {
		return storage.ListResult{}, mapErr(err)
	}
	out := storage.ListResult{Revision: resp.Header.Revision, More: resp.More, KVs: make([]storage.KV, len(resp.Kvs))}
	if rev > 0 {
		// etcd's header has its current revision, not the one read at: later pages of a list
		// must stay at the first page's.
		out.Revision = rev
	}
	for i, kv := range resp.Kvs {
		out.KVs[i] = toKV(kv)
	}
	return out, nil
}

// Create implements storage.Interface.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	defer observe("create", time.Now())
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		return 0, storage.ErrKeyExists
	}
	return resp.Header.Revision, nil
}

// Update implements storage.Interface.
func (s *Store) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	defer observe("update", time.Now())
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", expected)).
		Then(clientv3.OpPut(key, string(value))).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, mapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return 0, storage.ErrKeyNotFound
		}
		return 0, storage.ErrRevisionMismatch
	}
	return resp.Header.Revision, nil
}

// Delete implements storage.Interface.
func (s *Store) Delete(ctx context.Context, key string, expected int64) (storage.KV, int64, error) {
	defer observe("delete", time.Now())
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	cmp := clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	if expected > 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", expected)
	}
	resp, err := s.cli.Txn(ctx).
		If(cmp).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return storage.KV{}, 0, mapErr(err)
	}
	if !resp.Succeeded {
		if len(resp.Responses) == 0 || len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return storage.KV{}, 0, storage.ErrKeyNotFound
		}
		return storage.KV{}, 0, storage.ErrRevisionMismatch
	}
	del := resp.Responses[0].GetResponseDeleteRange()
	if len(del.PrevKvs) == 0 {
		return storage.KV{}, 0, storage.ErrKeyNotFound
	}
	return toKV(del.PrevKvs[0]), resp.Header.Revision, nil
}

// Watch implements storage.Interface.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64) <-chan storage.WatchResult {
	out := make(chan storage.WatchResult, 16)
	opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithPrevKV()}
	if rev > 0 {
		opts = append(opts, clientv3.WithRev(rev+1))
	}
	// RequireLeader makes the watch fail instead of hanging when the member loses its quorum.
	wch := s.cli.Watch(clientv3.WithRequireLeader(ctx), prefix, opts...)
	go func() {
		defer close(out)
		for resp := range wch {
			if resp.CompactRevision != 0 {
				send(ctx, out, storage.WatchResult{Err: fmt.Errorf("%w: at %d", storage.ErrCompacted, resp.CompactRevision)})
				return
			}
			if err := resp.Err(); err != nil {
				send(ctx, out, storage.WatchResult{Err: mapErr(err)})
				return
			}
			evs := make([]storage.Event, 0, len(resp.Events))
			for _, ev := range resp.Events {
				e := storage.Event{KV: toKV(ev.Kv), Revision: ev.Kv.ModRevision}
				if ev.PrevKv != nil {
					p := toKV(ev.PrevKv)
					e.PrevKV = &p
				}
				switch ev.Type {
				case clientv3.EventTypePut:
					e.Type = storage.Put
					e.Created = ev.IsCreate()
				case clientv3.EventTypeDelete:
					e.Type = storage.Delete
					if e.PrevKV != nil {
						e.KV = *e.PrevKV
						e.KV.ModRevision = ev.Kv.ModRevision
					}
				}
				evs = append(evs, e)
			}
			if len(evs) > 0 && !send(ctx, out, storage.WatchResult{Events: evs}) {
				return
			}
		}
	}()
	return out
}

func send(ctx context.Context, out chan<- storage.WatchResult, r storage.WatchResult) bool {
	select {
	case out <- r:
		return true
	case <-ctx.Done():
		return false
	}
}

// Revision implements storage.Interface.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	resp, err := s.cli.Get(ctx, "/minik8s/revision-probe", clientv3.WithCountOnly())
	if err != nil {
		return 0, mapErr(err)
	}
	return resp.Header.Revision, nil
}

// Compact implements storage.Interface.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	_, err := s.cli.Compact(ctx, rev)
	return mapErr(err)
}
