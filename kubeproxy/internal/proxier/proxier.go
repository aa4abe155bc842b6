package proxier

import (
	"context"
	"errors"
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
	// JumpChainsFixed counts the built-in chains whose jumps were missing or not first and
	// were put first again.
	JumpChainsFixed int
}

// Proxier is not safe for concurrent use: one loop calls it.
type Proxier struct {
	cfg Config
	// current is what the kernel holds of our chains, as far as we know; nil means unknown.
	current  rules.State
	lastFull time.Time
	// jumpsOK says every jump was found in place or put there since the last Invalidate.
	jumpsOK bool
	// jumps are rules.Jumps by built-in chain.
	jumps []jumpGroup
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
	return &Proxier{cfg: cfg, jumps: groupJumps(rules.Jumps())}
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
		res.JumpChainsFixed = n
		if err != nil {
			return res, err
		}
		p.jumpsOK = true
	}
	return res, nil
}

// jumpGroup is the jumps of one built-in chain, in the order they begin it.
type jumpGroup struct {
	table, chain string
	rules        [][]string
}

// groupJumps gathers jumps by built-in chain: chains in the order they first appear, each
// chain's jumps in their order.
func groupJumps(jumps []rules.Jump) []jumpGroup {
	var groups []jumpGroup
	index := map[[2]string]int{}
	for _, j := range jumps {
		key := [2]string{j.Table, j.Chain}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, jumpGroup{table: j.Table, chain: j.Chain})
		}
		groups[i].rules = append(groups[i].rules, j.Rule)
	}
	return groups
}

// EnsureJumps makes each built-in chain we use begin with our jumps, in the order of
// rules.Jumps, and returns how many chains it changed. When they are in place that costs one
// listing per chain. Our chains must exist (a Sync made them). A chain that fails does not
// keep the others from being fixed.
func (p *Proxier) EnsureJumps(ctx context.Context) (int, error) {
	changed := 0
	var errs []error
	for _, g := range p.jumps {
		ok, err := p.cfg.Tables.EnsureFirst(ctx, g.table, g.chain, g.rules...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			changed++
			p.cfg.Logger.Info("jump rules moved to the top", "table", g.table, "chain", g.chain, "jumps", len(g.rules))
		}
	}
	return changed, errors.Join(errs...)
}

// Check looks for one of our chains (cheap however many rules there are); if it is gone,
// someone flushed the tables, and the proxier forgets what it knew so the next Sync writes
// everything again. If it is there, Check puts our jumps first again where another program
// inserted rules above them: a CNI plugin's ACCEPT of pod traffic at the top of FORWARD would
// otherwise let connections to Services without endpoints past their REJECT. It reports
// whether the chain was there.
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
		return false, nil
	}
	if _, err := p.EnsureJumps(ctx); err != nil {
		// The next Sync tries again.
		p.jumpsOK = false
		return true, err
	}
	return true, nil
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
