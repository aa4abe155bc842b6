package reconcile

import (
	"log/slog"

	"minik8s.io/shared/workqueue/clock"
)

// WithDefaults is o with the real clock and slog.Default() where none is set: what a
// controller that reads the time or logs by itself calls once in its New.
func (o Options) WithDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
