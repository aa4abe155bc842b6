package podsuite

import (
	"errors"
	"time"
)

// Config sizes a run. Zero fields take the values of Defaults.
type Config struct {
	// Workdir holds binaries, state and logs; the caller removes it.
	Workdir string
	// APIServer and Kubelet are prebuilt binaries; empty builds them into Workdir.
	APIServer, Kubelet string
	AMQPURL            string
	RedisAddr          string
	// Burst pods are created at once; then Paced pods at Rate per second.
	Burst  int
	Paced  int
	Rate   float64
	Image  string
	Pause  string
	CNIDir []string
	// PLEGPeriods runs the kubelet once per period (its --pleg-period), each
	// with both tests; the baseline runs once.
	PLEGPeriods []time.Duration
	// Settle is the pause between tests, so one test's teardown does not
	// share the machine with the next one's startups.
	Settle time.Duration
	// PodTimeout bounds the wait for every pod of one test to run.
	PodTimeout time.Duration
}

// Defaults are the sizes of issue 3: a burst of 30, 100 pods at 5/s.
var Defaults = Config{
	AMQPURL:     "amqp://guest:guest@127.0.0.1:5672/",
	RedisAddr:   "127.0.0.1:6379",
	Burst:       30,
	Paced:       100,
	Rate:        5,
	Image:       "minik8s/echo:1.0",
	Pause:       "minik8s/pause:1.0",
	CNIDir:      []string{"/usr/lib/cni", "/opt/cni/bin"},
	PLEGPeriods: []time.Duration{time.Second, 100 * time.Millisecond},
	Settle:      3 * time.Second,
	PodTimeout:  2 * time.Minute,
}

func (c *Config) fill() error {
	d := Defaults
	if c.AMQPURL == "" {
		c.AMQPURL = d.AMQPURL
	}
	if c.RedisAddr == "" {
		c.RedisAddr = d.RedisAddr
	}
	if c.Burst <= 0 {
		c.Burst = d.Burst
	}
	if c.Paced <= 0 {
		c.Paced = d.Paced
	}
	if c.Rate <= 0 {
		c.Rate = d.Rate
	}
	if c.Image == "" {
		c.Image = d.Image
	}
	if c.Pause == "" {
		c.Pause = d.Pause
	}
	if len(c.CNIDir) == 0 {
		c.CNIDir = d.CNIDir
	}
	if len(c.PLEGPeriods) == 0 {
		c.PLEGPeriods = d.PLEGPeriods
	}
	if c.Settle < 0 {
		c.Settle = 0
	}
	if c.PodTimeout <= 0 {
		c.PodTimeout = d.PodTimeout
	}
	if c.Workdir == "" {
		return errors.New("podsuite: workdir is required")
	}
	return nil
}

// interval is the gap between paced starts.
func (c Config) interval() time.Duration {
	return time.Duration(float64(time.Second) / c.Rate)
}
