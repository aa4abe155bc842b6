package app

import (
	"math"
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
