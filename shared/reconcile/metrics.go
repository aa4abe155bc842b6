package reconcile

import (
	"sync/atomic"

	"minik8s.io/shared/metrics"
)

// registry is where the loops and queues made from now on report; nil: nowhere.
var registry atomic.Pointer[metrics.Registry]

// SetMetrics makes every loop New makes, and every controller NewController builds, from now
// on report to reg under its controller's name: queue depth, adds, retries, time queued and
// worked, reconcile durations by result and errors. The component manager calls it once,
// before the controllers are built, so that a controller gets its metrics without wiring of
// its own (as client-go's workqueue metrics provider does). nil turns metrics off for what is
// made next.
func SetMetrics(reg *metrics.Registry) { registry.Store(reg) }
