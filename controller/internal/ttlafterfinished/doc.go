// Package ttlafterfinished deletes finished Jobs (and, through the garbage collector, their
// pods) once their ttlSecondsAfterFinished has passed, as Kubernetes' TTL-after-finished
// controller does.
package ttlafterfinished
