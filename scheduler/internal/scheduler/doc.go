// Package scheduler is the scheduling loop: it takes a pending pod from the queue, filters the
// nodes in the cache, lets the strategy pick one, assumes the pod there and binds it through
// the API; a pod that fits nowhere gets PodScheduled=False with the reason and an Event, and
// waits in the queue's back-off.
package scheduler
