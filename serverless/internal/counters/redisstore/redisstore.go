package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"minik8s.io/serverless/internal/counters"
)

// DefaultPrefix is the key prefix of the serverless component's counters.
const DefaultPrefix = "minik8s:serverless:"

// DefaultTTL keeps a second's bucket past the longest stable window (an hour).
const DefaultTTL = time.Hour + 5*time.Minute

// Store is a counters.Store in Redis. Keys: <prefix>calls:<ns>/<name>:<unix second>, a hash
// of "n" (calls started) and "c" (call-seconds in flight), expiring after the TTL; and
// <prefix>lastcall, a sorted set of function keys scored by their last call in Unix
// milliseconds.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

var _ counters.Store = (*Store)(nil)

// New returns a store under prefix on rdb, its buckets expiring after ttl (DefaultPrefix and
// DefaultTTL when empty). It does no I/O.
func New(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Store{rdb: rdb, prefix: prefix, ttl: ttl}
}

func (s *Store) bucketKey(fn string, sec int64) string {
	return s.prefix + "calls:" + fn + ":" + strconv.FormatInt(sec, 10)
}

// LastCallKey is the sorted set of last call times.
func (s *Store) LastCallKey() string { return s.prefix + "lastcall" }

// Add writes the batch in one pipeline: HINCRBYFLOAT adds to what other gateways wrote,
// ZADD GT keeps the latest call.
func (s *Store) Add(ctx context.Context, b counters.Batch) error {
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for fn, bs := range b.Buckets {
			for _, bk := range bs {
				key := s.bucketKey(fn, bk.Second)
				if bk.Started != 0 {
					p.HIncrByFloat(ctx, key, "n", bk.Started)
				}
				if bk.Concurrency != 0 {
					p.HIncrByFloat(ctx, key, "c", bk.Concurrency)
				}
				p.Expire(ctx, key, s.ttl)
			}
		}
		for fn, t := range b.LastCalls {
			p.ZAddGT(ctx, s.LastCallKey(), redis.Z{Score: float64(t.UnixMilli()), Member: fn})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("write call counters: %w", err)
	}
	return nil
}

func (s *Store) Buckets(ctx context.Context, fn string, from, to int64) ([]counters.Bucket, error) {
	if to < from {
		return nil, nil
	}
	cmds := make([]*redis.SliceCmd, 0, to-from+1)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for sec := from; sec <= to; sec++ {
			cmds = append(cmds, p.HMGet(ctx, s.bucketKey(fn, sec), "n", "c"))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read call counters of %s: %w", fn, err)
	}
	var out []counters.Bucket
	for i, cmd := range cmds {
		vals := cmd.Val()
		if len(vals) != 2 || (vals[0] == nil && vals[1] == nil) {
			continue
		}
		bk := counters.Bucket{Second: from + int64(i)}
		var err error
		if bk.Started, err = number(vals[0]); err != nil {
			return nil, fmt.Errorf("call counters of %s: %w", fn, err)
		}
		if bk.Concurrency, err = number(vals[1]); err != nil {
			return nil, fmt.Errorf("call counters of %s: %w", fn, err)
		}
		out = append(out, bk)
	}
	return out, nil
}

func number(v any) (float64, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		return strconv.ParseFloat(v, 64)
	default:
		return 0, fmt.Errorf("unexpected counter value %v (%T)", v, v)
	}
}

func (s *Store) LastCalls(ctx context.Context, fns []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if len(fns) == 0 {
		return out, nil
	}
	scores, err := s.rdb.ZMScore(ctx, s.LastCallKey(), fns...).Result()
	if err != nil {
		return nil, fmt.Errorf("read last calls: %w", err)
	}
	// ZMSCORE answers nil for a missing member, which go-redis reads as 0.
	for i, sc := range scores {
		if sc > 0 {
			out[fns[i]] = time.UnixMilli(int64(sc))
		}
	}
	return out, nil
}

func (s *Store) Forget(ctx context.Context, fn string) error {
	if err := s.rdb.ZRem(ctx, s.LastCallKey(), fn).Err(); err != nil {
		return fmt.Errorf("forget last call of %s: %w", fn, err)
	}
	return nil
}
