// Package record writes core/v1 Events about objects, the way Kubernetes components do: callers
// never block (events are buffered and dropped, and counted, when the buffer is full), and a
// repeat of the same event bumps the existing Event's count instead of creating another.
package record
