// Package clock is the seam between timed code (delaying queues, resync loops, event timestamps)
// and the wall clock, so tests can step time by hand instead of sleeping.
package clock
