package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"minik8s.io/shared/bus"
)

// change is one write under /registry/ as etcd recorded it, turned into the message the
// outbox must publish for it: the check is derived from etcd, not from the outbox's code.
type change struct {
	id                        string // "<key>@<revision>"
	key                       string
	rev                       int64
	typ                       string
	resource, namespace, name string
	object                    map[string]any // stored value with metadata.resourceVersion = rev
	// stored and prev are the raw stored value and, for a modification, the one it replaced:
	// what routing reads.
	stored, prev []byte
}

// etcdRevision is the store's current revision.
func etcdRevision(t *testing.T, srv *apiserver) int64 {
	t.Helper()
	cli := etcdClient(t, srv)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("read etcd revision: %v", err)
	}
	return resp.Header.Revision
}

func etcdClient(t *testing.T, srv *apiserver) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.etcdEndpoints(), DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	return cli
}

// etcdChanges replays etcd's history from revision from up to now and returns, in
// revision order, the changes of keep'd keys.
func etcdChanges(t *testing.T, srv *apiserver, from int64, keep func(resource, namespace, name string) bool) []change {
	t.Helper()
	cli := etcdClient(t, srv)
	defer cli.Close()
	now := etcdRevision(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// Every revision is one transaction with at least one key event, so watching all keys
	// from `from` reaches `now` exactly when the history is read through.
	w := cli.Watch(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(from), clientv3.WithPrevKV())
	var out []change
	for last := from - 1; last < now; {
		resp, ok := <-w
		if !ok {
			t.Fatalf("etcd watch from %d ended at %d before reaching %d: %v", from, last, now, ctx.Err())
		}
		if err := resp.Err(); err != nil {
			t.Fatalf("etcd watch from %d: %v", from, err)
		}
		for _, ev := range resp.Events {
			last = max(last, ev.Kv.ModRevision)
			c, ok, err := toChange(ev)
			if err != nil {
				t.Fatal(err)
			}
			if ok && keep(c.resource, c.namespace, c.name) {
				out = append(out, c)
			}
		}
	}
	return out
}

func toChange(ev *clientv3.Event) (change, bool, error) {
	key := string(ev.Kv.Key)
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return change{}, false, nil
	}
	c := change{key: key, rev: ev.Kv.ModRevision}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 2:
		c.resource, c.name = parts[0], parts[1]
	case 3:
		c.resource, c.namespace, c.name = parts[0], parts[1], parts[2]
	default:
		return change{}, false, fmt.Errorf("unexpected registry key %q", key)
	}
	value := ev.Kv.Value
	switch {
	case ev.Type == clientv3.EventTypeDelete:
		c.typ = bus.Deleted
		if ev.PrevKv == nil {
			return change{}, false, fmt.Errorf("etcd delete of %s@%d without its previous value", key, c.rev)
		}
		value = ev.PrevKv.Value
	case ev.Kv.CreateRevision == ev.Kv.ModRevision:
		c.typ = bus.Added
	default:
		c.typ = bus.Modified
		if ev.PrevKv != nil {
			c.prev = ev.PrevKv.Value
		}
	}
	c.stored = value
	if err := json.Unmarshal(value, &c.object); err != nil {
		return change{}, false, fmt.Errorf("stored value of %s@%d is not JSON: %w", key, c.rev, err)
	}
	meta, _ := c.object["metadata"].(map[string]any)
	if meta == nil {
		return change{}, false, fmt.Errorf("stored value of %s@%d has no metadata", key, c.rev)
	}
	if rv, _ := meta["resourceVersion"].(string); rv != "" {
		return change{}, false, fmt.Errorf("stored value of %s@%d carries resourceVersion %q; storage must leave it empty", key, c.rev, rv)
	}
	meta["resourceVersion"] = strconv.FormatInt(c.rev, 10)
	c.id = key + "@" + strconv.FormatInt(c.rev, 10)
	return c, true, nil
}
