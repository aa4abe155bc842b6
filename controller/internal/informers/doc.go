// Package informers holds the caches the controller-manager's controllers share: one informer
// per resource, made on first request, fed by the controller-manager's bus queue and relisted on
// start, on every bus reconnect and periodically, so that several controllers reading pods cost
// one cache and one list.
package informers
