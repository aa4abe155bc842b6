package proxier

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"minik8s.io/kubeproxy/internal/catalog"
	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/rules"
)

// DefaultFullSyncPeriod is how often the proxier reads the kernel's chains back instead of
// trusting what it wrote last (kube-proxy's full sync period), which repairs rules someone
// else changed.
const DefaultFullSyncPeriod = time.Hour

// Config is the proxier's setup.
type Config struct {
	Tables  netfilter.Interface
	Options rules.Options
	// FullSyncPeriod: see DefaultFullSyncPeriod.
	FullSyncPeriod time.Duration
	// Now is the clock; time.Now when nil.
	Now     func() time.Time
	Logger  *slog.Logger
	Metrics *Metrics
}

// Result says what one Sync did.
type Result struct {
	// Full is true when the kernel's chains were read back first (the first sync, after a
	// failure, after Invalidate, every FullSyncPeriod).
	Full bool
	// PayloadBytes is the size of the payload restored; 0 when nothing had changed.
	PayloadBytes int
	Rules        int
	// JumpsAdded counts jump rules that were missing and were put back.
	JumpsAdded int
}

// Proxier is not safe for concurrent use: one loop calls it.
type Proxier struct {
	cfg Config
	// current is what the kernel holds of our chains, as far as we know; nil means unknown.
	current  rules.State
	lastFull time.Time
	// jumpsOK says every jump was found or added since the last Invalidate.
	jumpsOK bool
}

// New returns a proxier; it touches nothing until Sync.
func New(cfg Config) *Proxier {
	if cfg.FullSyncPeriod <= 0 {
		cfg.FullSyncPeriod = DefaultFullSyncPeriod
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Proxier{cfg: cfg}
}

// Invalidate forgets what the kernel holds, so the next Sync reads it back and checks every
// jump: for a periodic check that found our chains gone.
func (p *Proxier) Invalidate() {
	p.current = nil
	p.jumpsOK = false
}

// Sync makes the kernel hold the ruleset of ports.
func (p *Proxier) Sync(ctx context.Context, ports []catalog.ServicePort) (res Result, err error) {
	start := p.cfg.Now()
	defer func() { p.cfg.Metrics.observeSync(res, p.cfg.Now().Sub(start), err) }()

	r := rules.Build(ports, p.cfg.Options)
	res.Rules = r.Rules()
	if p.current == nil || start.Sub(p.lastFull) >= p.cfg.FullSyncPeriod {
		current, err := p.read(ctx)
		if err != nil {
			return res, err
		}
		p.current, p.lastFull, p.jumpsOK, res.Full = current, start, false, true
	}
	payload := r.Payload(p.current)
	if len(payload) > 0 {
		if err := p.cfg.Tables.Restore(ctx, payload); err != nil {
			// What the kernel holds is unknown now; read it back next time.
			p.current = nil
			return res, fmt.Errorf("restore %d bytes: %w", len(payload), err)
		}
		res.PayloadBytes = len(payload)
	}
	p.current = r.State()
	if !p.jumpsOK {
		n, err := p.EnsureJumps(ctx)
		res.JumpsAdded = n
		if err != nil {
			return res, err
		}
		p.jumpsOK = true
	}
	return res, nil
}

// EnsureJumps puts back any missing jump from a built-in chain and returns how many it added.
// Our chains must exist (a Sync made them).
func (p *Proxier) EnsureJumps(ctx context.Context) (int, error) {
	added := 0
	for _, j := range rules.Jumps() {
		ok, err := p.cfg.Tables.EnsureRule(ctx, j.Table, j.Chain, j.Rule...)
		if err != nil {
			return added, err
		}
		if ok {
			added++
			p.cfg.Logger.Info("added jump rule", "table", j.Table, "chain", j.Chain, "target", j.Rule[len(j.Rule)-1])
		}
	}
	return added, nil
}

// Check looks for one of our chains (cheap however many rules there are); if it is gone,
// someone flushed the tables, and the proxier forgets what it knew so the next Sync writes
// everything again. It reports whether the chain was there.
func (p *Proxier) Check(ctx context.Context) (bool, error) {
	if p.current == nil {
		return false, nil
	}
	ok, err := p.cfg.Tables.ChainExists(ctx, rules.TableNAT, rules.ChainMarkMasq)
	if err != nil {
		return false, err
	}
	if !ok {
		p.Invalidate()
	}
	return ok, nil
}

func (p *Proxier) read(ctx context.Context) (rules.State, error) {
	var all []byte
	for _, t := range []string{rules.TableNAT, rules.TableFilter} {
		b, err := p.cfg.Tables.Save(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("read %s table: %w", t, err)
		}
		all = append(all, b...)
	}
	return rules.ParseSave(all, rules.TableNAT, rules.TableFilter)
}
