package autoscaler

import (
	"testing"
	"time"

	"minik8s.io/serverless/internal/counters"
)

var t0 = time.Unix(1_700_000_000, 0)

// load is the calls of one second: average in flight and started.
type load struct{ concurrency, started float64 }

// sim runs Decide every 2 s as the autoscaler's loop does, over a load given per second
// since t0. Pods become ready at the next decision (ready = the previous decision), unless
// ready says otherwise.
type sim struct {
	s        Settings
	load     func(sec int) load
	ready    func(step int, prevDesired int32) int32
	activate func(sec int) bool
	start    int32 // replicas before the first decision
	seconds  int   // simulated length
}

type step struct {
	sec int
	d   Decision
}

func (m sim) run() []step {
	var out []step
	st := State{}
	desired := m.start
	var lastCall time.Time
	var buckets []counters.Bucket
	for sec := 0; sec <= m.seconds; sec++ {
		l := m.load(sec)
		if l.started > 0 || l.concurrency > 0 {
			buckets = append(buckets, counters.Bucket{Second: t0.Unix() + int64(sec), Concurrency: l.concurrency, Started: l.started})
			if l.started > 0 {
				lastCall = t0.Add(time.Duration(sec) * time.Second)
			}
		}
		if sec%2 != 0 {
			continue
		}
		now := t0.Add(time.Duration(sec) * time.Second)
		ready := desired
		if m.ready != nil {
			ready = m.ready(sec, desired)
		}
		// What the store holds at now: complete seconds only.
		var visible []counters.Bucket
		for _, b := range buckets {
			if b.Second < now.Unix() {
				visible = append(visible, b)
			}
		}
		vLast := lastCall
		if vLast.After(now.Add(-time.Second)) {
			vLast = time.Time{}
			for _, b := range visible {
				if b.Started > 0 {
					vLast = time.Unix(b.Second, 0)
				}
			}
		}
		activated := m.activate != nil && m.activate(sec)
		d := Decide(m.s, st, Observation{Now: now, Buckets: visible, LastCall: vLast, Activated: activated, ReadyPods: ready})
		st = d.State
		desired = d.Desired
		out = append(out, step{sec: sec, d: d})
	}
	return out
}

func at(steps []step, sec int) Decision {
	for _, s := range steps {
		if s.sec == sec {
			return s.d
		}
	}
	panic("no decision at that second")
}

func settings(mut func(*Settings)) Settings {
	s := Settings{MinReplicas: 0, MaxReplicas: 20, TargetConcurrency: 10, StableWindow: 60 * time.Second, Idle: 90 * time.Second}
	if mut != nil {
		mut(&s)
	}
	return s
}

func constant(c, started float64) func(int) load {
	return func(int) load { return load{c, started} }
}

func TestSteadyLoad(t *testing.T) {
	// The load arrives at an idle function, which panics for a while to catch up; after
	// that the replicas hold at 25 / 10.
	steps := sim{s: settings(nil), load: constant(25, 50), seconds: 240}.run()
	for _, s := range steps {
		if s.sec >= 10 && s.d.Desired != 3 {
			t.Errorf("t=%ds: desired %d (stable %.2f, panic %.2f), want 3", s.sec, s.d.Desired, s.d.StableConcurrency, s.d.PanicConcurrency)
		}
		if s.sec >= 80 && s.d.State.Panicking() {
			t.Errorf("t=%ds: still in panic under a steady load", s.sec)
		}
	}
	if d := at(steps, 120); d.StableConcurrency < 24.99 || d.StableConcurrency > 25.01 {
		t.Errorf("stable concurrency = %v, want 25", d.StableConcurrency)
	}
}

func TestBurstPanicsAndHoldsUntilAStableWindowAfter(t *testing.T) {
	// 5 in flight (one pod) until 100 s, 60 in flight until 130 s, then 5 again.
	l := func(sec int) load {
		if sec >= 100 && sec < 130 {
			return load{60, 100}
		}
		return load{5, 10}
	}
	steps := sim{s: settings(nil), load: l, start: 1, seconds: 300}.run()
	if d := at(steps, 98); d.Desired != 1 || d.State.Panicking() {
		t.Fatalf("before the burst: desired %d panic %v, want 1 and calm", d.Desired, d.State.Panicking())
	}
	// The panic window (6 s) sees the burst within a few seconds; the stable one (60 s) would not yet.
	d := at(steps, 104)
	if !d.State.Panicking() || d.Desired < 3 {
		t.Fatalf("4 s into the burst: desired %d panic %v (panic concurrency %.1f), want a panic of at least 3 pods", d.Desired, d.State.Panicking(), d.PanicConcurrency)
	}
	if s := at(steps, 110).Desired; s != 6 {
		t.Errorf("10 s into the burst: desired %d, want 6 (60 in flight / 10)", s)
	}
	// Once 6 pods are ready the panic window no longer asks for twice the ready pods; the
	// panic lasts a stable window past the last time it did, and the replicas do not go
	// down meanwhile, though the load is back to 5 at 130 s.
	var lastOver int
	for _, s := range steps {
		if s.d.State.PanicLastOver.Equal(t0.Add(time.Duration(s.sec) * time.Second)) {
			lastOver = s.sec
		}
	}
	if lastOver < 100 || lastOver > 108 {
		t.Errorf("last panic-worthy decision at %ds, want in the burst's first seconds", lastOver)
	}
	for _, s := range steps {
		if s.sec >= 110 && s.sec < lastOver+60 && s.d.Desired != 6 {
			t.Errorf("t=%ds in panic: desired %d, want 6 (never down)", s.sec, s.d.Desired)
		}
	}
	if d := at(steps, lastOver+58); !d.State.Panicking() {
		t.Errorf("t=%ds: panic over before a stable window had passed", lastOver+58)
	}
	if d := at(steps, lastOver+60); d.State.Panicking() {
		t.Errorf("t=%ds: still panicking a stable window after", lastOver+60)
	}
	if d := at(steps, lastOver+62); d.Desired >= 6 || d.Reason != ReasonStable {
		t.Errorf("after the panic: desired %d (%s), want fewer than 6 (stable)", d.Desired, d.Reason)
	}
	if d := at(steps, 300); d.Desired != 1 {
		t.Errorf("long after: desired %d, want 1", d.Desired)
	}
}

func TestLoadStopsScalesDownGraduallyThenToZeroAfterIdle(t *testing.T) {
	// 80 in flight until 120 s, nothing after.
	l := func(sec int) load {
		if sec < 120 {
			return load{80, 200}
		}
		return load{}
	}
	steps := sim{s: settings(nil), load: l, start: 8, seconds: 400}.run()
	prev := at(steps, 118).Desired
	if prev != 8 {
		t.Fatalf("under load: desired %d, want 8", prev)
	}
	lastCall := 119
	for _, s := range steps {
		if s.sec <= 120 {
			continue
		}
		if s.d.Desired > prev {
			t.Errorf("t=%ds: desired rose %d -> %d with no load", s.sec, prev, s.d.Desired)
		}
		if s.d.Desired < prev/2 {
			t.Errorf("t=%ds: desired fell %d -> %d, more than half at once", s.sec, prev, s.d.Desired)
		}
		if s.sec < lastCall+90 && s.d.Desired < 1 {
			t.Errorf("t=%ds: zero pods %ds after the last call, before the 90 s idle window", s.sec, s.sec-lastCall)
		}
		prev = s.d.Desired
	}
	// Down gradually: several distinct steps between 8 and 1.
	seen := map[int32]bool{}
	for _, s := range steps {
		if s.sec > 120 {
			seen[s.d.Desired] = true
		}
	}
	if len(seen) < 4 {
		t.Errorf("replicas after the load stopped took %d values, want a gradual descent", len(seen))
	}
	if d := at(steps, lastCall+1+90+2); d.Desired != 0 || d.Reason != ReasonIdle {
		t.Errorf("after the idle window: desired %d (%s), want 0 (idle)", d.Desired, d.Reason)
	}
}

func TestFlappingLoadHoldsSteady(t *testing.T) {
	// 5 and 25 in flight alternating every 3 s: the stable window sees 15 (2 pods).
	l := func(sec int) load {
		if (sec/3)%2 == 0 {
			return load{5, 10}
		}
		return load{25, 50}
	}
	steps := sim{s: settings(nil), load: l, start: 2, seconds: 300}.run()
	for _, s := range steps {
		if s.sec >= 100 && (s.d.Desired != 2 || s.d.State.Panicking()) {
			t.Errorf("t=%ds: desired %d panic %v, want 2 steadily", s.sec, s.d.Desired, s.d.State.Panicking())
		}
	}
}

func TestActivationAtZero(t *testing.T) {
	// Idle for long, then a call arrives at 200 s; the gateway holds it (activation) until a pod
	// is ready, which takes until 204 s; the call lasts until 205 s.
	l := func(sec int) load {
		if sec >= 200 && sec < 205 {
			return load{1, map[bool]float64{true: 1}[sec == 200]}
		}
		return load{}
	}
	steps := sim{
		s: settings(func(s *Settings) { s.Idle = 30 * time.Second }), load: l, seconds: 300,
		activate: func(sec int) bool { return sec == 200 || sec == 202 },
		ready: func(sec int, prev int32) int32 {
			if sec < 204 {
				return 0
			}
			return prev
		},
	}.run()
	if d := at(steps, 198); d.Desired != 0 {
		t.Fatalf("idle before the call: desired %d, want 0", d.Desired)
	}
	if d := at(steps, 200); d.Desired != 1 || d.Reason != ReasonActivation {
		t.Errorf("activation: desired %d (%s), want 1 at once", d.Desired, d.Reason)
	}
	for sec := 202; sec < 200+30; sec += 2 {
		if d := at(steps, sec); d.Desired != 1 {
			t.Errorf("t=%ds, within the idle window of the call: desired %d, want 1", sec, d.Desired)
		}
	}
	if d := at(steps, 238); d.Desired != 0 {
		t.Errorf("idle window after the call: desired %d, want 0", d.Desired)
	}
}

// TestActivationRemembered: the decision after an activation, before the gateways' counts
// show the call, keeps the pod.
func TestActivationRemembered(t *testing.T) {
	s := settings(func(s *Settings) { s.Idle = 10 * time.Second })
	d := Decide(s, State{}, Observation{Now: t0, Activated: true})
	if d.Desired != 1 {
		t.Fatalf("activation: desired %d, want 1", d.Desired)
	}
	d = Decide(s, d.State, Observation{Now: t0.Add(2 * time.Second)})
	if d.Desired != 1 {
		t.Errorf("next decision with no counts yet: desired %d, want 1", d.Desired)
	}
	d = Decide(s, d.State, Observation{Now: t0.Add(10 * time.Second)})
	if d.Desired != 0 {
		t.Errorf("idle window after the activation: desired %d, want 0", d.Desired)
	}
}

func TestLongCallKeepsItsPod(t *testing.T) {
	// One call from 0 s that lasts 100 s, with a 20 s idle window.
	l := func(sec int) load {
		if sec < 100 {
			return load{1, map[bool]float64{true: 1}[sec == 0]}
		}
		return load{}
	}
	steps := sim{s: settings(func(s *Settings) { s.Idle = 20 * time.Second }), load: l, start: 1, seconds: 140}.run()
	for _, s := range steps {
		if s.sec >= 2 && s.sec <= 100 && s.d.Desired != 1 {
			t.Errorf("t=%ds, call in flight: desired %d, want 1", s.sec, s.d.Desired)
		}
	}
	if d := at(steps, 106); d.Desired != 0 {
		t.Errorf("after the call, long past the idle window since it began: desired %d, want 0", d.Desired)
	}
}

func TestBounds(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
		l    func(int) load
		want int32
		why  string
	}{
		{"never called stays at zero", settings(nil), constant(0, 0), 0, ReasonIdle},
		{"min replicas while idle", settings(func(s *Settings) { s.MinReplicas = 2 }), constant(0, 0), 2, ReasonMin},
		{"max replicas under load", settings(func(s *Settings) { s.MaxReplicas = 3 }), constant(200, 100), 3, ReasonMax},
		{"rate target", settings(func(s *Settings) { s.TargetRate = 5 }), constant(0.5, 20), 4, ReasonStable},
		{"concurrency wins over a lower rate", settings(func(s *Settings) { s.TargetRate = 100 }), constant(35, 20), 4, ReasonStable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := sim{s: tt.s, load: tt.l, start: 1, seconds: 200}.run()
			d := at(steps, 200)
			if d.Desired != tt.want || d.Reason != tt.why {
				t.Errorf("desired %d (%s), want %d (%s)", d.Desired, d.Reason, tt.want, tt.why)
			}
			for _, s := range steps {
				if s.d.Desired > tt.s.MaxReplicas || s.d.Desired < tt.s.MinReplicas {
					t.Errorf("t=%ds: desired %d outside [%d, %d]", s.sec, s.d.Desired, tt.s.MinReplicas, tt.s.MaxReplicas)
				}
			}
		})
	}
}

// TestBurstAtZeroPanicsAtOnce: a burst held at zero asks for enough pods in the first seconds.
func TestBurstAtZeroPanicsAtOnce(t *testing.T) {
	l := func(sec int) load {
		if sec >= 100 {
			return load{40, 40}
		}
		return load{}
	}
	steps := sim{
		s: settings(nil), load: l, seconds: 110,
		activate: func(sec int) bool { return sec == 100 },
		ready:    func(sec int, prev int32) int32 { return min(prev, 1) },
	}.run()
	if d := at(steps, 100); d.Desired != 1 {
		t.Errorf("activation: desired %d, want 1", d.Desired)
	}
	if d := at(steps, 104); d.Desired < 3 || !d.State.Panicking() {
		t.Errorf("4 s later: desired %d panic %v (panic concurrency %.1f), want at least 3 in panic", d.Desired, d.State.Panicking(), d.PanicConcurrency)
	}
	if d := at(steps, 106); d.Desired != 4 {
		t.Errorf("a panic window later: desired %d, want 4 (40 in flight / 10)", d.Desired)
	}
}

func TestSettingsOfDefaults(t *testing.T) {
	s := SettingsOf(fnWithScale(nil))
	want := Settings{MaxReplicas: 10, TargetConcurrency: 10, StableWindow: 60 * time.Second, Idle: 60 * time.Second}
	if s != want {
		t.Errorf("defaults = %+v, want %+v", s, want)
	}
	if pw := s.PanicWindow(); pw != 6*time.Second {
		t.Errorf("panic window = %v, want 6s", pw)
	}
}
