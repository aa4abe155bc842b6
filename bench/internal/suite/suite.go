package suite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"minik8s.io/bench/internal/cluster"
	"minik8s.io/bench/internal/procstat"
	"minik8s.io/shared/apierror"
	"minik8s.io/shared/client"
	"minik8s.io/shared/scheme"
)

// configMapsResource is looked up once; the table is static.
var configMapsResource = func() *scheme.Resource {
	res, err := scheme.Lookup("configmaps")
	if err != nil {
		panic(err) // the served-resource table always has configmaps
	}
	return res
}()

func configMaps(c *client.Client) *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return client.For[*corev1.ConfigMap, *corev1.ConfigMapList](c, configMapsResource)
}

// Namespace holds every object the benchmark creates.
const Namespace = "bench"

// outboxRevisionKey is where the apiserver's outbox keeps the last revision
// the broker confirmed (outbox.DefaultRevisionKey, which is internal to the
// apiserver module).
const outboxRevisionKey = "/minik8s/outbox/revision"

// Config sizes a run. Zero fields take the defaults of Defaults.
type Config struct {
	// Workdir holds the apiserver binary and state; the caller removes it.
	Workdir string
	// Binary is a prebuilt apiserver; empty builds one into Workdir.
	Binary string
	// AMQPURL is the broker of both the outbox and the event consumer.
	AMQPURL string

	// Creates is the number of measured creates per system in the latency
	// test, after Warmup unmeasured ones.
	Creates int
	Warmup  int
	// Block is how many creates run before switching system, so slow drifts
	// in the load of a shared machine hit both systems alike.
	Block int
	// PayloadBytes is the size of the ConfigMap's one data value.
	PayloadBytes int

	// Clients is the concurrency of the throughput test, which alternates
	// Rounds rounds of RoundTime per system.
	Clients   int
	Rounds    int
	RoundTime time.Duration

	// EventRate changes per second for EventTime in the event test.
	EventRate int
	EventTime time.Duration
	// EventWorkers send the paced creates; enough that a slow response
	// does not hold back the schedule.
	EventWorkers int

	// Profile builds the apiserver with pprof and captures CPU profiles of
	// the throughput and event tests into Workdir.
	Profile bool

	// AuthorizationMode is the apiserver's --authorization-mode (ModeNodeRBAC or
	// ModeAlwaysAllow); empty keeps its default.
	AuthorizationMode string
	// Identity is who sends the measured requests: IdentityAdmin or IdentityRBAC.
	Identity string
	// OtherBindings is how many bindings to other subjects IdentityRBAC adds; zero adds
	// none.
	OtherBindings int
	// Audit turns on the apiserver's audit log, with configs/audit-policy.yaml, into
	// Workdir.
	Audit bool
	// Extensions adds tests 4 to 6: custom resource creates against ConfigMap creates, and
	// one validating webhook's added latency.
	Extensions bool
}

// Defaults are the figures make bench runs with.
var Defaults = Config{
	AMQPURL:       "amqp://guest:guest@127.0.0.1:5672/",
	Creates:       2000,
	Warmup:        200,
	Block:         250,
	PayloadBytes:  256,
	Clients:       64,
	Rounds:        2,
	RoundTime:     5 * time.Second,
	EventRate:     500,
	EventTime:     20 * time.Second,
	EventWorkers:  16,
	Identity:      IdentityAdmin,
	OtherBindings: 1000,
	Extensions:    true,
}

func (c *Config) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Creates, Defaults.Creates)
	def(&c.Warmup, Defaults.Warmup)
	def(&c.Block, Defaults.Block)
	def(&c.PayloadBytes, Defaults.PayloadBytes)
	def(&c.Clients, Defaults.Clients)
	def(&c.Rounds, Defaults.Rounds)
	def(&c.EventRate, Defaults.EventRate)
	def(&c.EventWorkers, Defaults.EventWorkers)
	if c.RoundTime <= 0 {
		c.RoundTime = Defaults.RoundTime
	}
	if c.EventTime <= 0 {
		c.EventTime = Defaults.EventTime
	}
	if c.AMQPURL == "" {
		c.AMQPURL = Defaults.AMQPURL
	}
	if c.Identity == "" {
		c.Identity = Defaults.Identity
	}
}

// env is what every test of a run shares.
type env struct {
	cfg     Config
	log     *slog.Logger
	proc    *cluster.Process
	binary  string
	api     *client.Client
	cms     *client.Typed[*corev1.ConfigMap, *corev1.ConfigMapList]
	etcd    *clientv3.Client
	runID   string
	payload string
	// token is the measured identity's bearer token; empty means admin's kubeconfig.
	token string
	// brokerPids are RabbitMQ's processes, whose CPU the throughput test
	// reports; empty when the broker runs elsewhere.
	brokerPids []int
}

// Run starts an apiserver, runs the three tests and stops it.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*Report, error) {
	cfg.fill()
	if cfg.Workdir == "" {
		return nil, errors.New("suite: workdir is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("suite: %w", err)
	}
	rep := &Report{Machine: DescribeMachine(), Config: cfg}
	e := &env{cfg: cfg, log: log, runID: randomID(), payload: payload(cfg.PayloadBytes), brokerPids: procstat.FindProcesses(brokerCommand)}

	e.binary = cfg.Binary
	if e.binary == "" || cfg.Profile {
		log.Info("building apiserver", "pprof", cfg.Profile)
		bin, err := cluster.Build(ctx, cfg.Workdir, cfg.Profile)
		if err != nil {
			return nil, err
		}
		e.binary = bin
	}
	var policy string
	if cfg.Audit {
		p, err := auditPolicy(ctx)
		if err != nil {
			return nil, err
		}
		policy = p
	}
	proc, err := cluster.Start(ctx, cluster.Options{
		Binary: e.binary, Home: filepath.Join(cfg.Workdir, "home"), AMQPURL: cfg.AMQPURL, Pprof: cfg.Profile,
		ExtraArgs: apiserverArgs(cfg, policy),
	})
	if err != nil {
		return nil, err
	}
	e.proc = proc
	defer func() {
		if err := proc.Stop(15 * time.Second); err != nil {
			log.Warn("stopping apiserver", "err", err)
		}
	}()
	log.Info("apiserver ready", "pid", proc.Pid, "etcd", proc.EtcdURL, "log", proc.LogPath)

	if e.api, err = proc.Client(10 * time.Second); err != nil {
		return nil, err
	}
	e.etcd, err = clientv3.New(clientv3.Config{Endpoints: []string{proc.EtcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("etcd client: %w", err)
	}
	defer e.etcd.Close()
	if err := e.ensureNamespace(ctx, Namespace, nil); err != nil {
		return nil, err
	}
	if err := e.setupIdentity(ctx); err != nil {
		return nil, err
	}
	writer, err := e.client()
	if err != nil {
		return nil, err
	}
	e.cms = configMaps(writer)

	log.Info("test 1: create latency", "creates", cfg.Creates, "warmup", cfg.Warmup)
	if err := e.latency(ctx, rep); err != nil {
		return nil, fmt.Errorf("create latency: %w", err)
	}
	log.Info("create latency", "api", rep.CreateAPI.String(), "etcd", rep.CreateEtcd.String())

	log.Info("test 2: throughput", "clients", cfg.Clients, "rounds", cfg.Rounds, "roundTime", cfg.RoundTime)
	if err := e.throughput(ctx, rep); err != nil {
		return nil, fmt.Errorf("throughput: %w", err)
	}
	log.Info("throughput", "api", rep.ThroughputAPI, "etcd", rep.ThroughputEtcd)

	log.Info("test 3: event latency", "rate", cfg.EventRate, "duration", cfg.EventTime)
	if err := e.events(ctx, rep); err != nil {
		return nil, fmt.Errorf("event latency: %w", err)
	}
	log.Info("event latency", "bus", rep.EventBus.String(), "watch", rep.EventWatch.String())

	if cfg.Extensions {
		if rep.Extensions, err = e.extensions(ctx); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// ensureNamespace creates a namespace with labels, or keeps the one there: the suite's own
// namespace, and the webhook test's two.
func (e *env) ensureNamespace(ctx context.Context, name string, labels map[string]string) error {
	res, err := scheme.Lookup("namespaces")
	if err != nil {
		return err
	}
	ns := client.For[*corev1.Namespace, *corev1.NamespaceList](e.api, res)
	_, err = ns.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !errors.Is(err, apierror.ErrAlreadyExists) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// configMap is the object every test writes: one data value of the payload
// size, plus the send time when stamped.
func (e *env) configMap(name string, sentAt time.Time) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Data:       map[string]string{"payload": e.payload},
	}
	if !sentAt.IsZero() {
		cm.Data[sentAtKey] = strconv.FormatInt(sentAt.UnixNano(), 10)
	}
	return cm
}

// waitOutbox waits until the outbox has published every change up to rev, so
// the next measurement does not share the machine with a publishing backlog.
func (e *env) waitOutbox(ctx context.Context, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		resp, err := e.etcd.Get(ctx, outboxRevisionKey)
		if err != nil {
			return fmt.Errorf("wait for outbox to reach revision %d: %w", rev, err)
		}
		if len(resp.Kvs) == 1 {
			if got, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err == nil && got >= rev {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("outbox did not reach revision %d (is RabbitMQ up? see %s): %w", rev, e.proc.LogPath, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func payload(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}
