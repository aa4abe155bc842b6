package memstore

import "math/rand/v2"

// maxLevel lets a skip list with a quarter of the nodes on each next level hold far more keys
// than a test writes.
const maxLevel = 16

// index orders the records by key: a skip list, so a new key costs O(log n), and a range read
// seeks in O(log n) and then walks.
type index struct {
	head  node
	level int
	rnd   *rand.Rand
}

type node struct {
	rec  *record
	next []*node
}

func newIndex() *index {
	// A fixed seed: the shape of the list never changes what it holds, only how fast.
	return &index{head: node{next: make([]*node, maxLevel)}, level: 1, rnd: rand.New(rand.NewPCG(1, 2))}
}

// preds returns, for every level, the last node whose key is below key.
func (ix *index) preds(key string) *[maxLevel]*node {
	var p [maxLevel]*node
	n := &ix.head
	for l := ix.level - 1; l >= 0; l-- {
		for n.next[l] != nil && n.next[l].rec.key < key {
			n = n.next[l]
		}
		p[l] = n
	}
	return &p
}

// seek returns the first node with a key at or after key, nil when there is none.
func (ix *index) seek(key string) *node {
	return ix.preds(key)[0].next[0]
}

// insert adds rec, whose key must not be in the index.
func (ix *index) insert(rec *record) {
	p := ix.preds(rec.key)
	level := 1
	for level < maxLevel && ix.rnd.Uint32()&3 == 0 {
		level++
	}
	for ; ix.level < level; ix.level++ {
		p[ix.level] = &ix.head
	}
	n := &node{rec: rec, next: make([]*node, level)}
	for l := range level {
		n.next[l] = p[l].next[l]
		p[l].next[l] = n
	}
}

// remove drops the node of key, if there is one.
func (ix *index) remove(key string) {
	p := ix.preds(key)
	n := p[0].next[0]
	if n == nil || n.rec.key != key {
		return
	}
	for l := range n.next {
		p[l].next[l] = n.next[l]
	}
}
