package memstore

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"minik8s.io/apiserver/internal/storage"
)

// Watch implements storage.Interface. A watcher reads the store's history at its own pace
// instead of having events pushed into a buffer, so a watcher that does not read never holds
// up a write, and the history is all the buffering there is. The price: a watcher still behind
// a revision when it is compacted ends with ErrCompacted, as a watch started there would.
func (s *Store) Watch(ctx context.Context, prefix string, rev int64) <-chan storage.WatchResult {
	out := make(chan storage.WatchResult)
	s.mu.Lock()
	next := rev + 1
	if rev <= 0 {
		next = s.rev + 1
	}
	s.mu.Unlock()
	go s.feed(ctx, prefix, next, out)
	return out
}

// feed sends out the changes under prefix from revision next on until ctx ends or the watcher
// falls behind a compaction.
func (s *Store) feed(ctx context.Context, prefix string, next int64, out chan<- storage.WatchResult) {
	defer close(out)
	for {
		evs, after, wake, err := s.pending(prefix, next)
		if err != nil {
			select {
			case out <- storage.WatchResult{Err: err}:
			case <-ctx.Done():
			}
			return
		}
		next = after
		if len(evs) == 0 {
			select {
			case <-wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case out <- storage.WatchResult{Events: evs}:
		case <-ctx.Done():
			return
		}
	}
}

// pending returns copies of at most s.batch changes under prefix from revision next on, and
// the revision to go on from. With none, wake is closed by the next write.
func (s *Store) pending(prefix string, next int64) (evs []storage.Event, after int64, wake <-chan struct{}, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if next < s.compacted {
		return nil, 0, nil, fmt.Errorf("%w: watch from revision %d, compacted at %d", storage.ErrCompacted, next, s.compacted)
	}
	i := sort.Search(len(s.log), func(i int) bool { return s.log[i].Revision >= next })
	for ; i < len(s.log) && len(evs) < s.batch; i++ {
		ev := s.log[i]
		next = ev.Revision + 1
		if strings.HasPrefix(ev.KV.Key, prefix) {
			evs = append(evs, cloneEvent(ev))
		}
	}
	return evs, next, s.changed, nil
}

func cloneEvent(ev storage.Event) storage.Event {
	ev.KV = cloneKV(ev.KV)
	if ev.PrevKV != nil {
		p := cloneKV(*ev.PrevKV)
		ev.PrevKV = &p
	}
	return ev
}
