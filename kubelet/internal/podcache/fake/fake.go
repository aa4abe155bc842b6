package fake

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"minik8s.io/kubelet/internal/podcache"
)

// Cache is a podcache.Cache in memory. The zero value is not usable; call New.
type Cache struct {
	mu   sync.Mutex
	pods map[string]*corev1.Pod
	// Err, when set, is returned by every call, to test how callers cope with a cache outage.
	err error
	// writes counts stored Puts and Deletes, so tests can see that a stale Put wrote nothing.
	writes int
}

var _ podcache.Cache = (*Cache)(nil)

// New returns an empty cache.
func New() *Cache { return &Cache{pods: map[string]*corev1.Pod{}} }

// SetError makes every later call fail with err (nil restores normal behaviour).
func (c *Cache) SetError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// Writes is the number of Puts and Deletes that changed the cache.
func (c *Cache) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

func (c *Cache) Put(ctx context.Context, pod *corev1.Pod) error {
	key, err := podcache.KeyOf(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	if old, ok := c.pods[key]; ok && !podcache.Newer(pod.ResourceVersion, old.ResourceVersion) {
		return nil
	}
	// A copy, as Redis would hold: callers keep mutating their pods.
	c.pods[key] = pod.DeepCopy()
	c.writes++
	return nil
}

func (c *Cache) Delete(ctx context.Context, namespace, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	key := podcache.Key(namespace, name)
	if _, ok := c.pods[key]; ok {
		delete(c.pods, key)
		c.writes++
	}
	return nil
}

func (c *Cache) List(ctx context.Context) ([]*corev1.Pod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return nil, c.err
	}
	out := make([]*corev1.Pod, 0, len(c.pods))
	for _, p := range c.pods {
		out = append(out, p.DeepCopy())
	}
	podcache.Sort(out)
	return out, nil
}
