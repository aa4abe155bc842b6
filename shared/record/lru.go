package record

import "container/list"

// lru remembers the newest aggregates; an old repeat that fell out simply becomes a new Event.
type lru struct {
	size  int
	order *list.List // front is newest; values are *lruEntry
	items map[aggregateKey]*list.Element
}

type lruEntry struct {
	key aggregateKey
	val aggregate
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), items: map[aggregateKey]*list.Element{}}
}

func (c *lru) get(k aggregateKey) (aggregate, bool) {
	e, ok := c.items[k]
	if !ok {
		return aggregate{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*lruEntry).val, true
}

func (c *lru) put(k aggregateKey, v aggregate) {
	if e, ok := c.items[k]; ok {
		e.Value.(*lruEntry).val = v
		c.order.MoveToFront(e)
		return
	}
	c.items[k] = c.order.PushFront(&lruEntry{key: k, val: v})
	if c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry).key)
	}
}
