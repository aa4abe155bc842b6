package iptables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/shared/netns"
)

// Config tunes the adapter; the zero value uses the commands on PATH in the current network
// namespace.
type Config struct {
	// NetNS, when set, runs every command in that network namespace (a path such as
	// /run/netns/<name>). Tests and benchmarks use it; kubeproxy runs in its node's namespace.
	NetNS string
	// RestoreCommand and SaveCommand default to iptables-restore and iptables-save.
	RestoreCommand, SaveCommand string
	// Wait is how long a command waits for the xtables lock (legacy backend); default 5 s.
	Wait time.Duration
}

// Tables is the adapter.
type Tables struct {
	cfg Config
	ipt *goipt.IPTables
}

var _ netfilter.Interface = (*Tables)(nil)

// New finds the iptables commands (go-iptables runs `iptables --version` to learn what they
// support).
func New(cfg Config) (*Tables, error) {
	if cfg.RestoreCommand == "" {
		cfg.RestoreCommand = "iptables-restore"
	}
	if cfg.SaveCommand == "" {
		cfg.SaveCommand = "iptables-save"
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 5 * time.Second
	}
	for _, c := range []string{cfg.RestoreCommand, cfg.SaveCommand} {
		if _, err := exec.LookPath(c); err != nil {
			return nil, fmt.Errorf("iptables: %w", err)
		}
	}
	ipt, err := goipt.New(goipt.Timeout(int(cfg.Wait.Seconds())))
	if err != nil {
		return nil, fmt.Errorf("iptables: %w", err)
	}
	return &Tables{cfg: cfg, ipt: ipt}, nil
}

// Restore runs iptables-restore --noflush with payload on its standard input.
func (t *Tables) Restore(ctx context.Context, payload []byte) error {
	args := []string{"-w", fmt.Sprint(int(t.cfg.Wait.Seconds())), "--noflush"}
	_, err := t.run(ctx, t.cfg.RestoreCommand, args, payload)
	return err
}

// Save runs iptables-save -t table.
func (t *Tables) Save(ctx context.Context, table string) ([]byte, error) {
	return t.run(ctx, t.cfg.SaveCommand, []string{"-t", table}, nil)
}

// EnsureFirst lists the chain (iptables -S) and, unless it begins with rules and holds no
// other copy of them, inserts them at position 1 (the last first), lists the chain again and
// deletes the older copies by position, bottom up. Before each deletion it reads that
// position back (iptables -S <chain> <n>), so that a rule another program inserted meanwhile
// is never deleted in place of ours; the next call finishes then.
func (t *Tables) EnsureFirst(_ context.Context, table, chain string, rules ...[]string) (bool, error) {
	keys, err := netfilter.Keys(rules)
	if err != nil {
		return false, fmt.Errorf("ensure first in %s/%s: %w", table, chain, err)
	}
	var changed bool
	err = netns.Do(t.cfg.NetNS, func() error {
		have, err := t.list(table, chain)
		if err != nil {
			return err
		}
		first, stale := netfilter.Placement(have, keys)
		if first && len(stale) == 0 {
			return nil
		}
		if !first {
			for i := len(rules) - 1; i >= 0; i-- {
				if err := t.ipt.Insert(table, chain, 1, rules[i]...); err != nil {
					var undoErr error
					if undoErr = t.takeBack(table, chain, rules[i+1:]); undoErr == nil {
						changed = false
					}
					return errors.Join(err, undoErr)
				}
				changed = true
			}
			if have, err = t.list(table, chain); err != nil {
				return err
			}
			_, stale = netfilter.Placement(have, keys)
		}
		for _, pos := range slices.Backward(stale) {
			want, _ := netfilter.KeyOf(have[pos-1])
			line, err := t.ipt.ListById(table, chain, pos)
			if err != nil {
				return err
			}
			args, err := netfilter.SplitRule(line)
			if err != nil {
				return err
			}
			if got, _ := netfilter.KeyOf(args); got != want {
				return fmt.Errorf("rule %d changed while old copies were deleted (now %q)", pos, line)
			}
			if err := t.ipt.DeleteById(table, chain, pos); err != nil {
				return err
			}
			changed = true
		}
		return nil
	})
	if err != nil {
		return changed, fmt.Errorf("ensure first in %s/%s: %w", table, chain, err)
	}
	return changed, nil
}

// takeBack deletes the rules just inserted at the top of the chain after inserting another
// failed. A deletion by rule deletes the first match, which is the copy just inserted.
func (t *Tables) takeBack(table, chain string, inserted [][]string) error {
	var errs []error
	for _, r := range inserted {
		if err := t.ipt.Delete(table, chain, r...); err != nil {
			errs = append(errs, fmt.Errorf("take back %q: %w", strings.Join(r, " "), err))
		}
	}
	return errors.Join(errs...)
}

// list returns the rules of a chain as arguments, top first.
func (t *Tables) list(table, chain string) ([][]string, error) {
	lines, err := t.ipt.List(table, chain)
	if err != nil {
		return nil, err
	}
	var rules [][]string
	for _, line := range lines {
		if !strings.HasPrefix(line, "-A ") {
			continue // the policy (-P) or the chain itself (-N)
		}
		args, err := netfilter.SplitRule(line)
		if err != nil {
			return nil, err
		}
		rules = append(rules, args)
	}
	return rules, nil
}

// ChainExists asks for the chain's first rule (cheap however large the table).
func (t *Tables) ChainExists(_ context.Context, table, chain string) (bool, error) {
	var ok bool
	err := netns.Do(t.cfg.NetNS, func() error {
		var err error
		ok, err = t.ipt.ChainExists(table, chain)
		return err
	})
	return ok, err
}

func (t *Tables) run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	err := netns.Do(t.cfg.NetNS, func() error {
		cmd := exec.CommandContext(ctx, name, args...)
		if stdin != nil {
			cmd.Stdin = bytes.NewReader(stdin)
		}
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd.Run()
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
