package rediscache

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/podcache"
)

// NodePrefix is the key prefix of a node's cache.
func NodePrefix(node string) string { return "minik8s:kubelet:" + node + ":" }

// Cache is a podcache.Cache in Redis.
type Cache struct {
	rdb  redis.UniversalClient
	pods string // hash key: pod JSON by namespace/name
	rvs  string // hash key: resourceVersion by namespace/name
}

var _ podcache.Cache = (*Cache)(nil)

// New returns a cache under prefix (see NodePrefix) on rdb. It does no I/O.
func New(rdb redis.UniversalClient, prefix string) *Cache {
	return &Cache{rdb: rdb, pods: prefix + "pods", rvs: prefix + "rvs"}
}

// Keys are the Redis keys the cache uses, for operators and test cleanup.
func (c *Cache) Keys() []string { return []string{c.pods, c.rvs} }

// putScript stores the pod unless the stored resourceVersion is the same or newer; it is
// podcache.Newer in Lua. KEYS: pods hash, rvs hash. ARGV: field, resourceVersion, JSON.
// Returns 1 when it wrote.
var putScript = redis.NewScript(`
local function decimal(s) return s ~= '' and string.match(s, '^%d+$') ~= nil end
local function trim(s) local t = string.gsub(s, '^0+', '') if t == '' then return '0' end return t end
local function newer(nxt, prev)
  if not (decimal(nxt) and decimal(prev)) then return nxt ~= prev end
  nxt, prev = trim(nxt), trim(prev)
  if #nxt ~= #prev then return #nxt > #prev end
  return nxt > prev
end
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old and not newer(ARGV[2], old) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1
`)

func (c *Cache) Put(ctx context.Context, pod *corev1.Pod) error {
	key, err := podcache.KeyOf(pod)
	if err != nil {
		return err
	}
	data, err := json.Marshal(pod)
	if err != nil {
		return fmt.Errorf("encode pod %s: %w", key, err)
	}
	if err := putScript.Run(ctx, c.rdb, []string{c.pods, c.rvs}, key, pod.ResourceVersion, data).Err(); err != nil {
		return fmt.Errorf("cache pod %s: %w", key, err)
	}
	return nil
}

func (c *Cache) Delete(ctx context.Context, namespace, name string) error {
	key := podcache.Key(namespace, name)
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HDel(ctx, c.pods, key)
		p.HDel(ctx, c.rvs, key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("uncache pod %s: %w", key, err)
	}
	return nil
}

func (c *Cache) List(ctx context.Context) ([]*corev1.Pod, error) {
	all, err := c.rdb.HGetAll(ctx, c.pods).Result()
	if err != nil {
		return nil, fmt.Errorf("list cached pods: %w", err)
	}
	out := make([]*corev1.Pod, 0, len(all))
	for key, data := range all {
		pod := &corev1.Pod{}
		if err := json.Unmarshal([]byte(data), pod); err != nil {
			return nil, fmt.Errorf("decode cached pod %s: %w", key, err)
		}
		out = append(out, pod)
	}
	podcache.Sort(out)
	return out, nil
}
