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
	// EnsureRule puts rule at the top of table/chain unless the chain has it already, and
	// reports whether it added it.
	EnsureRule(ctx context.Context, table, chain string, rule ...string) (added bool, err error)
	// ChainExists reports whether table has chain.
	ChainExists(ctx context.Context, table, chain string) (bool, error)
}
