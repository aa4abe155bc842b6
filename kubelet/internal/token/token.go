package token

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"

	"minik8s.io/shared/workqueue/clock"
)

const (
	// maxTTL bounds how long a token is reused whatever its lifetime: a token that long-lived
	// is refreshed daily, so a rotated signing key reaches every pod.
	maxTTL = 24 * time.Hour
	// refreshPercent of a token's life left triggers a refresh: at 80% of its life.
	refreshPercent = 20
	// cleanupPeriod is how often expired tokens are dropped from the cache.
	cleanupPeriod = time.Minute
	// A failed request is retried after initialRetry, doubling up to maxRetry: less than
	// the 20% of the shortest lifetime (10 minutes) that is left when refreshes start.
	initialRetry = time.Second
	maxRetry     = time.Minute
)

// Requester asks the API for a token: POST
// /api/v1/namespaces/<namespace>/serviceaccounts/<name>/token with the kubelet's credential.
type Requester interface {
	CreateToken(ctx context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error)
}

// Config wires a Manager.
type Config struct {
	Requester Requester
	Clock     clock.Clock
	Logger    *slog.Logger
	// Jitter returns a random fraction in [0, 1) that spreads retries; nil uses math/rand.
	Jitter func() float64
}

// Manager caches tokens by pod, ServiceAccount, audiences and lifetime. Safe for concurrent
// use.
type Manager struct {
	req    Requester
	clock  clock.Clock
	log    *slog.Logger
	jitter func() float64

	mu    sync.Mutex
	cache map[string]*entry
}

type entry struct {
	tr *authnv1.TokenRequest
	// issued is when the token's life began: its expiry less the seconds it was granted.
	issued time.Time
	pod    types.UID
	// failures counts requests failed in a row; none is sent before retryAt.
	failures int
	retryAt  time.Time
	lastErr  error
}

// New returns a Manager; Start drops expired tokens in the background.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	return &Manager{req: cfg.Requester, clock: cfg.Clock, log: cfg.Logger.With("component", "token"), jitter: cfg.Jitter,
		cache: map[string]*entry{}}
}

// GetServiceAccountToken returns a token for the ServiceAccount namespace/name as req asks:
// the cached one while it is fresh, else a new one. When a refresh fails, the cached token is
// returned until it expires; requests after a failure wait out a back-off, so a pod synced
// often does not hammer the API.
func (m *Manager) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authnv1.TokenRequest) (*authnv1.TokenRequest, error) {
	key := keyFor(namespace, name, req)
	now := m.clock.Now()

	m.mu.Lock()
	e := m.cache[key]
	switch {
	case e != nil && e.tr != nil && !m.requiresRefresh(e, now):
		tr := e.tr
		m.mu.Unlock()
		return tr, nil
	case e != nil && now.Before(e.retryAt):
		defer m.mu.Unlock()
		if e.tr != nil && !expired(e.tr, now) {
			return e.tr, nil
		}
		return nil, fmt.Errorf("failed to fetch token: %w (retrying in %s)", e.lastErr, e.retryAt.Sub(now).Round(time.Second))
	}
	m.mu.Unlock()

	tr, err := m.req.CreateToken(ctx, namespace, name, req)
	now = m.clock.Now()

	m.mu.Lock()
	defer m.mu.Unlock()
	e = m.cache[key]
	if err != nil {
		if e == nil {
			e = &entry{pod: podOf(req)}
			m.cache[key] = e
		}
		e.failures++
		e.lastErr = err
		e.retryAt = now.Add(m.retryDelay(e.failures))
		switch {
		case e.tr == nil:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case expired(e.tr, now):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		}
		m.log.Warn("couldn't update token", "key", key, "err", err)
		return e.tr, nil
	}
	m.cache[key] = &entry{tr: tr, issued: issuedAt(tr, now), pod: podOf(req)}
	return tr, nil
}

// DeleteServiceAccountToken forgets every token bound to the pod: it is gone.
func (m *Manager) DeleteServiceAccountToken(pod types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.cache {
		if e.pod == pod {
			delete(m.cache, k)
		}
	}
}

// Cleanup drops expired tokens, and failures with no token once their back-off ended: a pod
// removed while the kubelet was down is never deleted by name.
func (m *Manager) Cleanup() {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, e := range m.cache {
		if (e.tr != nil && expired(e.tr, now)) || (e.tr == nil && !now.Before(e.retryAt)) {
			delete(m.cache, k)
		}
	}
}

// Start runs Cleanup every minute until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	for {
		t := m.clock.NewTimer(cleanupPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		m.Cleanup()
	}
}

// requiresRefresh reports whether a token is older than 80% of its life or than 24 hours.
func (m *Manager) requiresRefresh(e *entry, now time.Time) bool {
	exp := e.tr.Status.ExpirationTimestamp.Time
	if exp.IsZero() {
		return true
	}
	if now.After(e.issued.Add(maxTTL)) {
		return true
	}
	life := exp.Sub(e.issued)
	return now.After(exp.Add(-life * refreshPercent / 100))
}

// retryDelay is the back-off after n failures in a row, with up to 10% jitter.
func (m *Manager) retryDelay(n int) time.Duration {
	d := initialRetry
	for i := 1; i < n && d < maxRetry; i++ {
		d *= 2
	}
	d = min(d, maxRetry)
	return d + time.Duration(m.jitter()*float64(d)/10)
}

func expired(tr *authnv1.TokenRequest, now time.Time) bool {
	return now.After(tr.Status.ExpirationTimestamp.Time)
}

// issuedAt is when the token's life began. The API answers with the lifetime it granted,
// which may be shorter than the one asked; without one, the answer's arrival is the start.
func issuedAt(tr *authnv1.TokenRequest, received time.Time) time.Time {
	if s := tr.Spec.ExpirationSeconds; s != nil && !tr.Status.ExpirationTimestamp.IsZero() {
		return tr.Status.ExpirationTimestamp.Add(-time.Duration(*s) * time.Second)
	}
	return received
}

func podOf(req *authnv1.TokenRequest) types.UID {
	if ref := req.Spec.BoundObjectRef; ref != nil {
		return ref.UID
	}
	return ""
}

// keyFor names a token by what it was asked for: the ServiceAccount, the audiences, the
// lifetime and the object it is bound to.
func keyFor(namespace, name string, req *authnv1.TokenRequest) string {
	var exp int64
	if req.Spec.ExpirationSeconds != nil {
		exp = *req.Spec.ExpirationSeconds
	}
	var ref authnv1.BoundObjectReference
	if req.Spec.BoundObjectRef != nil {
		ref = *req.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%q/%d/%s/%s/%q/%s", namespace, name, req.Spec.Audiences, exp, ref.APIVersion, ref.Kind, ref.Name, ref.UID)
}
