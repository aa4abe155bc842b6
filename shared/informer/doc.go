// Package informer keeps a local, indexed copy of one resource: it lists, then watches from the
// list's resourceVersion (or takes bus events through Apply), relists when the watch ends or
// expires, never lets a stale event overwrite newer state, and tells event handlers about each
// change in order. Controllers read from its Store through a Lister instead of asking the
// apiserver, and react to handler calls by queueing keys.
package informer
