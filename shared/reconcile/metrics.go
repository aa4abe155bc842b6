package reconcile

import (
	"sync/atomic"

	"minik8s.io/shared/metrics"
	"minik8s.io/shared/workqueue"
	"minik8s.io/shared/workqueue/clock"
)

// registry is where the loops and queues made from now on report; nil: nowhere.
var registry atomic.Pointer[metrics.Registry]

// SetMetrics makes every loop New makes, and every queue NewQueue makes, from now on report
// to reg under its controller's name: queue depth, adds, retries, time queued and worked,
// reconcile durations by result and errors. The controller-manager calls it once, before it
// builds its controllers, so that a controller gets its metrics without wiring of its own (as
// client-go's workqueue metrics provider does). nil turns metrics off for what is made next.
func SetMetrics(reg *metrics.Registry) { registry.Store(reg) }

// NewQueue returns a work queue reporting to the registry as name: for a controller that runs
// its own workers instead of a Loop (it should report its reconciles with SyncMetrics too).
func NewQueue(name string, clk clock.Clock) *workqueue.Queue[string] {
	return workqueue.New(workqueue.Config[string]{Clock: clk, Metrics: registry.Load().Queue(name)})
}

// SyncMetrics returns the reconcile metrics of the controller name (nil, which records
// nothing, without a registry).
func SyncMetrics(name string) *metrics.Controller { return registry.Load().Controller(name) }
