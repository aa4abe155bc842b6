package rbac

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"minik8s.io/apiserver/internal/authorizer"
)

// maxCachedDecisions bounds a DecisionCache; when full it starts over.
const maxCachedDecisions = 8192

// DecisionCache remembers the RBAC authorizer's decisions until the policy changes: a client
// repeating a request (every create of a controller, every list of a kubelet) is then
// decided by one map lookup instead of a visit of its bindings and their rules. Whoever
// feeds the authorizer calls Invalidate on any change of a Role, ClusterRole, RoleBinding or
// ClusterRoleBinding; a decision made while a change arrives is never served after it.
type DecisionCache struct {
	next *Authorizer
	gen  atomic.Uint64

	mu      sync.RWMutex
	entries map[decisionKey]cachedDecision
	// entriesGen is the generation the entries were decided in.
	entriesGen uint64
}

// decisionKey is what RBAC decides on: the user's name and groups, and the request without
// its API version and field selector, which no rule looks at.
type decisionKey struct {
	user, groups                                           string
	verb, path, apiGroup, namespace, resource, subresource string
	name                                                   string
	resourceRequest                                        bool
}

type cachedDecision struct {
	decision authorizer.Decision
	reason   string
}

var _ authorizer.Authorizer = (*DecisionCache)(nil)

// NewDecisionCache caches next's decisions.
func NewDecisionCache(next *Authorizer) *DecisionCache {
	return &DecisionCache{next: next, entries: map[decisionKey]cachedDecision{}}
}

// Invalidate forgets every decision: the policy changed.
func (c *DecisionCache) Invalidate() { c.gen.Add(1) }

// Authorize implements authorizer.Authorizer. Errors are not cached: a decision that met
// one (a binding to a missing role) is made again next time.
func (c *DecisionCache) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	gen := c.gen.Load()
	key := decisionKey{user: a.User.Name, groups: strings.Join(a.User.Groups, "\n"), verb: a.Verb, path: a.Path,
		apiGroup: a.APIGroup, namespace: a.Namespace, resource: a.Resource, subresource: a.Subresource,
		name: a.Name, resourceRequest: a.ResourceRequest}
	c.mu.RLock()
	e, ok := c.entries[key]
	fresh := c.entriesGen == gen
	c.mu.RUnlock()
	if ok && fresh {
		return e.decision, e.reason, nil
	}
	d, reason, err := c.next.Authorize(ctx, a)
	if err != nil {
		return d, reason, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entriesGen != gen {
		if c.entriesGen > gen {
			// The policy changed while deciding: this decision may be stale.
			return d, reason, nil
		}
		clear(c.entries)
		c.entriesGen = gen
	}
	if len(c.entries) >= maxCachedDecisions {
		clear(c.entries)
	}
	c.entries[key] = cachedDecision{decision: d, reason: reason}
	return d, reason, nil
}
