package pods

import (
	"sync"
	"time"

	"minik8s.io/shared/workqueue/clock"
)

// imageTTL is how long an image seen present is trusted without asking the engine again.
const imageTTL = 30 * time.Second

// images remembers which images the engine had a moment ago. A burst of pods with one image
// would otherwise ask the engine once per container while it is busiest, starting the others'
// containers. An image removed behind the kubelet's back costs one failed create, which
// forgets it, and a retry.
type images struct {
	clock clock.Clock
	mu    sync.Mutex
	seen  map[string]time.Time
}

func newImages(clk clock.Clock) *images { return &images{clock: clk, seen: map[string]time.Time{}} }

// present reports whether image was seen present within imageTTL.
func (c *images) present(image string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[image]
	if ok && c.clock.Since(at) >= imageTTL {
		delete(c.seen, image)
		ok = false
	}
	return ok
}

func (c *images) mark(image string) {
	c.mu.Lock()
	c.seen[image] = c.clock.Now()
	c.mu.Unlock()
}

func (c *images) forget(image string) {
	c.mu.Lock()
	delete(c.seen, image)
	c.mu.Unlock()
}
