package iptables

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	goipt "github.com/coreos/go-iptables/iptables"

	"minik8s.io/kubeproxy/internal/netfilter"
	"minik8s.io/kubeproxy/internal/netns"
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

// EnsureRule inserts rule at position 1 unless `iptables -C` finds it.
func (t *Tables) EnsureRule(_ context.Context, table, chain string, rule ...string) (bool, error) {
	var added bool
	err := netns.Do(t.cfg.NetNS, func() error {
		ok, err := t.ipt.Exists(table, chain, rule...)
		if err != nil || ok {
			return err
		}
		added = true
		return t.ipt.Insert(table, chain, 1, rule...)
	})
	if err != nil {
		return false, fmt.Errorf("ensure rule in %s/%s: %w", table, chain, err)
	}
	return added, nil
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
