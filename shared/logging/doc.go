// Package logging builds the slog loggers every minik8s binary uses, so all components log
// with the same keys (component always set, then pod, node, key, err) in text or JSON.
package logging
