package autoscaler

import (
	"math"
	"time"

	"minik8s.io/serverless/internal/counters"
)

// Observation is what one decision about a function looks at.
type Observation struct {
	Now time.Time
	// Buckets are the function's calls per second summed over every gateway, covering at
	// least the stable window before Now; seconds with no calls may be left out. The second
	// Now is in is still being counted and is ignored.
	Buckets []counters.Bucket
	// LastCall is the latest call any gateway recorded; zero when none did.
	LastCall time.Time
	// Activated: a gateway holds a call of the function and no pod is ready.
	Activated bool
	// ReadyPods is how many of the function's pods are ready.
	ReadyPods int32
}

// State is what a decision leaves for the next one about the same function.
type State struct {
	// PanicSince is when the panic began; zero outside panic.
	PanicSince time.Time
	// PanicLastOver is the last time the panic window asked for at least PanicThreshold times
	// the ready pods. The panic ends a stable window after it.
	PanicLastOver time.Time
	// PanicMax is the most replicas asked for during the panic: it never goes down.
	PanicMax int32
	// LastCall is the latest call or activation seen.
	LastCall time.Time
}

// Panicking reports whether the function is in panic mode.
func (s State) Panicking() bool { return !s.PanicSince.IsZero() }

// Decision is the replica count to run and why.
type Decision struct {
	Desired int32
	State   State
	// Averages over the stable and the panic window: calls in flight and calls per second.
	StableConcurrency, PanicConcurrency float64
	StableRate, PanicRate               float64
	// Reason names the rule that settled Desired: stable, panic, idle, activation, min or max.
	Reason string
}

// Reasons of a Decision.
const (
	ReasonStable     = "stable"
	ReasonPanic      = "panic"
	ReasonIdle       = "idle"
	ReasonActive     = "active"
	ReasonActivation = "activation"
	ReasonMin        = "min"
	ReasonMax        = "max"
)

// recent is how many of the last complete seconds show whether calls are still in flight.
const recent = 3

// Decide works out a function's replicas from its calls, as Knative's pod autoscaler does:
//   - the in-flight calls averaged over the stable window, divided by the per-pod target and
//     rounded up (and likewise the call rate when a target rate is set; the larger wins);
//   - the same over the panic window (a tenth of the stable one): when it asks for at least
//     twice the ready pods the function panics, and while it panics the replicas follow the
//     panic window and never go down; the panic ends a stable window after the last time it
//     was asked for;
//   - outside panic one decision removes at most half the ready pods;
//   - with no call for the idle window, and none in flight, the function goes to zero; until
//     then it keeps at least one pod; a call held at zero (activation) asks for one at once;
//   - the result is clamped to min and max.
func Decide(s Settings, prev State, o Observation) Decision {
	st := prev
	if o.LastCall.After(st.LastCall) {
		st.LastCall = o.LastCall
	}
	if o.Activated && o.Now.After(st.LastCall) {
		st.LastCall = o.Now
	}
	d := Decision{}
	end := o.Now.Unix() // the current second is still being counted
	d.StableConcurrency, d.StableRate = average(o.Buckets, end, s.StableWindow)
	d.PanicConcurrency, d.PanicRate = average(o.Buckets, end, s.PanicWindow())
	stable := s.want(d.StableConcurrency, d.StableRate)
	panicWant := s.want(d.PanicConcurrency, d.PanicRate)

	ready := max(o.ReadyPods, 1)
	if float64(panicWant) >= PanicThreshold*float64(ready) {
		if !st.Panicking() {
			st.PanicSince = o.Now
		}
		st.PanicLastOver = o.Now
	} else if st.Panicking() && o.Now.Sub(st.PanicLastOver) >= s.StableWindow {
		st.PanicSince, st.PanicLastOver, st.PanicMax = time.Time{}, time.Time{}, 0
	}

	if st.Panicking() {
		d.Desired = max(panicWant, stable, st.PanicMax)
		st.PanicMax = d.Desired
		d.Reason = ReasonPanic
	} else {
		d.Desired = max(stable, int32(math.Floor(float64(o.ReadyPods)/MaxScaleDownRate)))
		d.Reason = ReasonStable
	}

	inFlight := false
	for _, b := range o.Buckets {
		if b.Second >= end-recent && b.Second < end && b.Concurrency > 0 {
			inFlight = true
		}
	}
	idle := !inFlight && (st.LastCall.IsZero() || o.Now.Sub(st.LastCall) >= s.Idle)
	switch {
	case o.Activated:
		if d.Desired < 1 {
			d.Desired, d.Reason = 1, ReasonActivation
		}
	case idle:
		d.Desired, d.Reason = 0, ReasonIdle
		st.PanicSince, st.PanicLastOver, st.PanicMax = time.Time{}, time.Time{}, 0
	case d.Desired < 1:
		d.Desired, d.Reason = 1, ReasonActive
	}
	if d.Desired < s.MinReplicas {
		d.Desired, d.Reason = s.MinReplicas, ReasonMin
	}
	if d.Desired > s.MaxReplicas {
		d.Desired, d.Reason = s.MaxReplicas, ReasonMax
	}
	if st.Panicking() {
		st.PanicMax = min(st.PanicMax, s.MaxReplicas)
	}
	d.State = st
	return d
}

// want is the pods the averages ask for.
func (s Settings) want(concurrency, rate float64) int32 {
	n := podsFor(concurrency, s.TargetConcurrency)
	if s.TargetRate > 0 {
		n = max(n, podsFor(rate, s.TargetRate))
	}
	return n
}

func podsFor(load, target float64) int32 {
	if load <= 0 || target <= 0 {
		return 0
	}
	// The epsilon keeps 20.0000001/10 (float sums of call-seconds) at 2 pods.
	n := math.Ceil(load/target - 1e-9)
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}

// average is the in-flight calls and calls per second over the window of whole seconds
// before end; seconds with no bucket count as idle.
func average(bs []counters.Bucket, end int64, window time.Duration) (concurrency, rate float64) {
	secs := int64(window / time.Second)
	if secs < 1 {
		secs = 1
	}
	start := end - secs
	for _, b := range bs {
		if b.Second >= start && b.Second < end {
			concurrency += b.Concurrency
			rate += b.Started
		}
	}
	return concurrency / float64(secs), rate / float64(secs)
}
