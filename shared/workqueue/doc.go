// Package workqueue is the queue between event handlers and controller workers: it
// deduplicates keys, never hands one key to two workers at once, delays keys (AddAfter) and
// backs off keys that keep failing (AddRateLimited), so a controller stays level-triggered and
// a hot failing object cannot starve the others.
package workqueue
