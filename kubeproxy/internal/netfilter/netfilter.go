package netfilter

import "context"

// Interface is what kubeproxy does to the packet filter. Tables and chains are named as
// iptables names them ("nat", "PREROUTING").
type Interface interface {
	// Restore applies an iptables-restore payload without flushing the tables it names
	// (--noflush): chains it declares are created or flushed, chains it does not name keep
	// their rules. It is all or nothing: on error the tables are as before.
	Restore(ctx context.Context, payload []byte) error
	// Save returns the rules of table as iptables-save prints them.
	Save(ctx context.Context, table string) ([]byte, error)
	// EnsureFirst makes table/chain begin with rules, in this order, each once; the chain's
	// other rules keep their order after them. A rule is known by its comment and target (see
	// KeyOf), so each needs both and no two may share them. The rules are inserted before
	// their old copies are deleted: the chain is never without them. It reports whether it
	// changed the chain.
	EnsureFirst(ctx context.Context, table, chain string, rules ...[]string) (changed bool, err error)
	// ChainExists reports whether table has chain.
	ChainExists(ctx context.Context, table, chain string) (bool, error)
}
