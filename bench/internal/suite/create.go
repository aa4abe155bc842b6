package suite

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/stats"
	"minik8s.io/shared/client"
)

// etcdPrefix keeps the raw puts apart from /registry/, so the outbox never
// sees them and the apiserver never lists them.
const etcdPrefix = "/bench/"

// create makes one ConfigMap through the API and returns its revision.
func (e *env) create(ctx context.Context, cms *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList], name string, sentAt time.Time) (int64, error) {
	got, err := cms.Create(ctx, e.configMap(name, sentAt), metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("create configmap %s: %w", name, err)
	}
	rev, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("configmap %s: resourceVersion %q: %w", name, got.ResourceVersion, err)
	}
	return rev, nil
}

// put is the raw baseline of create: one etcd write of the same bytes the
// apiserver stores, as a create, i.e. a transaction that fails if the key
// exists, which is what the apiserver's storage does.
func (e *env) put(ctx context.Context, key string, value []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := e.etcd.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(value))).
		Commit()
	if err != nil {
		return fmt.Errorf("etcd put %s: %w", key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("etcd put %s: key exists", key)
	}
	return nil
}

// storedValue reads what the apiserver stored for a ConfigMap, the value
// size the baseline writes.
func (e *env) storedValue(ctx context.Context, name string) ([]byte, error) {
	key := "/registry/configmaps/" + Namespace + "/" + name
	resp, err := e.etcd.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if len(resp.Kvs) != 1 {
		return nil, fmt.Errorf("read %s: not found; is the apiserver using this etcd?", key)
	}
	return resp.Kvs[0].Value, nil
}

// latency runs test 1: creates one at a time on one keep-alive connection,
// alternating blocks of API creates and etcd puts.
func (e *env) latency(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	for i := range cfg.Warmup {
		if _, err := e.create(ctx, e.cms, fmt.Sprintf("warm-%d", i), time.Time{}); err != nil {
			return err
		}
	}
	value, err := e.storedValue(ctx, "warm-0")
	if err != nil {
		return err
	}
	rep.ValueBytes = len(value)
	for i := range cfg.Warmup {
		if err := e.put(ctx, fmt.Sprintf("%swarm/%d", etcdPrefix, i), value); err != nil {
			return err
		}
	}

	api, raw := stats.NewRecorder(cfg.Creates), stats.NewRecorder(cfg.Creates)
	for start := 0; start < cfg.Creates; start += cfg.Block {
		end := min(start+cfg.Block, cfg.Creates)
		var last int64
		for i := start; i < end; i++ {
			t0 := time.Now()
			rev, err := e.create(ctx, e.cms, fmt.Sprintf("lat-%d", i), time.Time{})
			if err != nil {
				return err
			}
			api.Add(time.Since(t0))
			last = rev
		}
		if err := e.waitOutbox(ctx, last); err != nil {
			return err
		}
		for i := start; i < end; i++ {
			t0 := time.Now()
			if err := e.put(ctx, fmt.Sprintf("%slat/%d", etcdPrefix, i), value); err != nil {
				return err
			}
			raw.Add(time.Since(t0))
		}
	}
	rep.CreateAPI, rep.CreateEtcd = api.Summary(), raw.Summary()
	return nil
}

// throughput runs test 2: Clients concurrent writers for RoundTime, API and
// etcd in turn. Each API writer is its own client with its own connection, as
// separate controllers would be; the etcd writers share one gRPC client, as
// the apiserver's storage does.
func (e *env) throughput(ctx context.Context, rep *Report) error {
	cfg := e.cfg
	clients := make([]*client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList], cfg.Clients)
	for w := range clients {
		c, err := e.client()
		if err != nil {
			return err
		}
		clients[w] = configMaps(c)
		// Connect (TLS handshake) before the clock starts.
		if _, err := e.create(ctx, clients[w], fmt.Sprintf("tp-warm-%d", w), time.Time{}); err != nil {
			return err
		}
	}
	value, err := e.storedValue(ctx, "tp-warm-0")
	if err != nil {
		return err
	}

	var apiOps, etcdOps int
	var apiTime, etcdTime time.Duration
	var apiCPU, etcdCPU CPUPerOp
	var prof *profile
	for r := range cfg.Rounds {
		if cfg.Profile && r == cfg.Rounds-1 {
			prof = e.startProfile(ctx, "throughput", cfg.RoundTime)
		}
		before := e.sampleCPU()
		n, took, last, err := e.runWriters(ctx, cfg.Clients, cfg.RoundTime, func(ctx context.Context, w, i int) (int64, error) {
			return e.create(ctx, clients[w], fmt.Sprintf("tp-%d-%d-%d", r, w, i), time.Time{})
		})
		if err != nil {
			return err
		}
		apiCPU = apiCPU.add(perOp(before, e.sampleCPU(), n))
		apiOps, apiTime = apiOps+n, apiTime+took
		if err := e.waitOutbox(ctx, last); err != nil {
			return err
		}
		if prof != nil {
			rep.Profiles = append(rep.Profiles, prof.wait())
			prof = nil
		}
		before = e.sampleCPU()
		n, took, _, err = e.runWriters(ctx, cfg.Clients, cfg.RoundTime, func(ctx context.Context, w, i int) (int64, error) {
			return 0, e.put(ctx, fmt.Sprintf("%stp/%d/%d/%d", etcdPrefix, r, w, i), value)
		})
		if err != nil {
			return err
		}
		etcdCPU = etcdCPU.add(perOp(before, e.sampleCPU(), n))
		etcdOps, etcdTime = etcdOps+n, etcdTime+took
	}
	rep.ThroughputAPI = stats.Rate(apiOps, apiTime)
	rep.ThroughputEtcd = stats.Rate(etcdOps, etcdTime)
	rep.ThroughputOps = [2]int{apiOps, etcdOps}
	rep.ThroughputCPU = [2]CPUPerOp{apiCPU.div(cfg.Rounds), etcdCPU.div(cfg.Rounds)}
	return nil
}

// runWriters runs n writers that call op back to back until d has passed,
// and returns the completed operations, the time from start until the last
// writer finished, and the highest revision op returned. The first error
// stops every writer.
func (e *env) runWriters(ctx context.Context, n int, d time.Duration, op func(ctx context.Context, w, i int) (int64, error)) (int, time.Duration, int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var ops atomic.Int64
	var mu sync.Mutex
	var last int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				rev, err := op(ctx, w, i)
				if err != nil {
					cancel(err)
					return
				}
				ops.Add(1)
				mu.Lock()
				last = max(last, rev)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, 0, 0, err
	}
	return int(ops.Load()), took, last, nil
}
