package counters

import (
	"sync"
	"time"
)

// Bucket is one second of one function's calls, summed over whoever recorded them.
type Bucket struct {
	// Second is the Unix second the bucket covers: [Second, Second+1).
	Second int64
	// Started counts the calls that began in the second.
	Started float64
	// Concurrency is the number of calls in flight averaged over the second: the integral of
	// in-flight calls over time, in call-seconds. Several gateways' buckets add up.
	Concurrency float64
}

// Batch is what a Tally hands over when it seals: complete buckets and last call times.
type Batch struct {
	// Buckets by function key ("namespace/name"), oldest first.
	Buckets map[string][]Bucket
	// LastCalls by function key, only for functions called since the previous seal.
	LastCalls map[string]time.Time
}

// Empty reports whether the batch holds nothing.
func (b Batch) Empty() bool { return len(b.Buckets) == 0 && len(b.LastCalls) == 0 }

// Tally accumulates one process's calls. It is fed with the times calls begin and end and
// holds each second's bucket until Seal takes it. The zero value is ready; it is safe for
// concurrent use.
type Tally struct {
	mu  sync.Mutex
	fns map[string]*fnTally
}

type fnTally struct {
	inflight int
	// accounted is the time up to which in-flight calls are integrated into buckets.
	accounted time.Time
	// open buckets by second, not yet sealed (the current second, and older ones between seals).
	open     map[int64]*Bucket
	lastCall time.Time
	called   bool // a call began since the last seal
}

// Begin records that a call of fn began at now.
func (t *Tally) Begin(fn string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.fn(fn, now)
	f.advance(now)
	f.inflight++
	f.bucket(now.Unix()).Started++
	if now.After(f.lastCall) {
		f.lastCall = now
	}
	f.called = true
}

// End records that a call of fn that began earlier ended at now.
func (t *Tally) End(fn string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.fn(fn, now)
	f.advance(now)
	if f.inflight > 0 {
		f.inflight--
	}
}

// InFlight is the number of calls of fn this tally has in flight.
func (t *Tally) InFlight(fn string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if f := t.fns[fn]; f != nil {
		return f.inflight
	}
	return 0
}

// Seal takes the buckets of every second that ended by now, and the last call of each
// function called since the previous seal. With all, it takes the current second's
// incomplete bucket too (when the process stops). Functions with nothing in flight and
// nothing left are forgotten.
func (t *Tally) Seal(now time.Time, all bool) Batch {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := Batch{Buckets: map[string][]Bucket{}, LastCalls: map[string]time.Time{}}
	cut := now.Unix() // buckets before this second are complete
	if all {
		cut++
	}
	for key, f := range t.fns {
		f.advance(now)
		var out []Bucket
		for sec, bk := range f.open {
			if sec < cut {
				if bk.Started != 0 || bk.Concurrency != 0 {
					out = append(out, *bk)
				}
				delete(f.open, sec)
			}
		}
		if len(out) > 0 {
			sortBuckets(out)
			b.Buckets[key] = out
		}
		if f.called {
			b.LastCalls[key] = f.lastCall
			f.called = false
		}
		if f.inflight == 0 && len(f.open) == 0 {
			delete(t.fns, key)
		}
	}
	return b
}

func (t *Tally) fn(key string, now time.Time) *fnTally {
	if t.fns == nil {
		t.fns = map[string]*fnTally{}
	}
	f := t.fns[key]
	if f == nil {
		f = &fnTally{accounted: now, open: map[int64]*Bucket{}}
		t.fns[key] = f
	}
	return f
}

func (f *fnTally) bucket(sec int64) *Bucket {
	b := f.open[sec]
	if b == nil {
		b = &Bucket{Second: sec}
		f.open[sec] = b
	}
	return b
}

// advance integrates the calls in flight from f.accounted to now into the buckets of the
// seconds it spans.
func (f *fnTally) advance(now time.Time) {
	if !now.After(f.accounted) {
		return
	}
	if f.inflight > 0 {
		from, to := f.accounted.UnixNano(), now.UnixNano()
		for from < to {
			sec := from / int64(time.Second)
			end := min((sec+1)*int64(time.Second), to)
			f.bucket(sec).Concurrency += float64(f.inflight) * float64(end-from) / float64(time.Second)
			from = end
		}
	}
	f.accounted = now
}

func sortBuckets(bs []Bucket) {
	// Insertion sort: a batch holds a handful of seconds.
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].Second < bs[j-1].Second; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}
