package app

import (
	"context"
	"log/slog"
	"time"

	"minik8s.io/apiserver/internal/storage"
)

// runCompactor discards etcd history older than one interval, as Kubernetes does, but never past
// the revision the outbox has published (floor), so no change is lost to the bus.
func runCompactor(ctx context.Context, store storage.Interface, interval time.Duration, floor func(context.Context) (int64, error), log *slog.Logger) error {
	if interval <= 0 {
		return nil
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var previous int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, err := store.Revision(ctx)
		if err != nil {
			log.Warn("compactor: read revision", "err", err)
			continue
		}
		target := previous
		previous = cur
		if floor != nil {
			f, err := floor(ctx)
			if err != nil {
				log.Warn("compactor: read outbox revision", "err", err)
				continue
			}
			target = min(target, f)
		}
		if target <= 0 {
			continue
		}
		if err := store.Compact(ctx, target); err != nil {
			log.Debug("compactor: compact", "revision", target, "err", err)
			continue
		}
		log.Debug("compacted", "revision", target)
	}
}
