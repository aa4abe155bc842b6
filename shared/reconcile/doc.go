// Package reconcile is the worker loop that the key-based controllers of the controller-manager
// and of serverless share: handlers queue keys, workers pop one, reconcile it from the caches,
// forget it on success and requeue it with per-key exponential backoff on error, and every key
// is queued again each resync period as the level-triggered safety net.
package reconcile
