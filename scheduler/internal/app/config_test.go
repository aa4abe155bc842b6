package app

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	valid := func() Config {
		return Config{AMQPURL: "amqp://guest:guest@127.0.0.1:5672/", Strategy: "balanced", RelistPeriod: time.Minute,
			EventsQPS: 50, EventsBurst: 100}
	}
	for _, tt := range []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", func(*Config) {}, ""},
		{"events unthrottled", func(c *Config) { c.EventsQPS = 0 }, ""},
		{"events NaN", func(c *Config) { c.EventsQPS = math.NaN() }, "--events-qps NaN"},
		{"events Inf", func(c *Config) { c.EventsQPS = math.Inf(1) }, "--events-qps +Inf"},
		{"events too slow", func(c *Config) { c.EventsQPS = 1e-300 }, "--events-qps"},
		{"events negative", func(c *Config) { c.EventsQPS = -1 }, "--events-qps -1"},
		{"burst negative", func(c *Config) { c.EventsBurst = -1 }, "--events-burst -1"},
		{"bind workers default", func(c *Config) { c.BindWorkers = 0 }, ""},
		{"bind workers too many", func(c *Config) { c.BindWorkers = 5000 }, "--bind-workers 5000"},
		{"bind workers negative", func(c *Config) { c.BindWorkers = -1 }, "--bind-workers -1"},
		{"debug address", func(c *Config) { c.DebugAddress = "127.0.0.1:10259" }, ""},
		{"debug address without port", func(c *Config) { c.DebugAddress = "127.0.0.1" }, "--debug-address"},
		{"percentage over 100", func(c *Config) { c.PercentageOfNodesToScore = 101 }, "--percentage-of-nodes-to-score 101"},
		{"unknown strategy", func(c *Config) { c.Strategy = "fastest" }, "--strategy"},
		{"procs default", func(c *Config) { c.Procs = DefaultProcs }, ""},
		{"procs one per CPU", func(c *Config) { c.Procs = 0 }, ""},
		{"procs negative", func(c *Config) { c.Procs = -1 }, "--procs -1"},
		{"procs too many", func(c *Config) { c.Procs = 5000 }, "--procs 5000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mod(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// ApplyProcs sets GOMAXPROCS from the flag, unless the environment variable chose or the flag
// asks for Go's default.
func TestApplyProcs(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	want := before + 1
	if got := ApplyProcs(want, ""); got != want || runtime.GOMAXPROCS(0) != want {
		t.Errorf("ApplyProcs(%d, \"\") = %d, GOMAXPROCS %d; want both %d", want, got, runtime.GOMAXPROCS(0), want)
	}
	runtime.GOMAXPROCS(before)
	if got := ApplyProcs(want, "3"); got != before || runtime.GOMAXPROCS(0) != before {
		t.Errorf("with GOMAXPROCS set in the environment: ApplyProcs = %d, GOMAXPROCS %d; want both unchanged %d", got, runtime.GOMAXPROCS(0), before)
	}
	if got := ApplyProcs(want, "abc"); got != want || runtime.GOMAXPROCS(0) != want {
		t.Errorf("with an invalid GOMAXPROCS, which Go ignores: ApplyProcs = %d, GOMAXPROCS %d; want both %d", got, runtime.GOMAXPROCS(0), want)
	}
	runtime.GOMAXPROCS(before)
	if got := ApplyProcs(0, ""); got != before || runtime.GOMAXPROCS(0) != before {
		t.Errorf("ApplyProcs(0) = %d, GOMAXPROCS %d; want both unchanged %d", got, runtime.GOMAXPROCS(0), before)
	}
}
