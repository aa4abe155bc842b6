package app

import (
	"errors"
	"fmt"
	"net"
	"time"

	"minik8s.io/shared/bus"
	"minik8s.io/shared/metrics"
)

// Config is the serverless component's configuration, from flags.
type Config struct {
	Kubeconfig string
	AMQPURL    string
	// Queue is the bus queue consumed (bus.QueueServerless); tests use a private one.
	Queue string
	// RedisAddr is the Redis the gateways count calls in (host:port).
	RedisAddr string
	// GatewayAddress is where the gateway serves POST /function/<ns>/<name> and
	// /workflow/<ns>/<name> (host:port).
	GatewayAddress string
	// MetricsAddress is where /metrics and /healthz are served; empty: nowhere.
	MetricsAddress string
	// DockerHost is the Docker engine images are built on (empty: DOCKER_HOST or the local
	// socket).
	DockerHost string
	// RuntimeImage is the base image function images are built on.
	RuntimeImage string
	// PipArgs are added to pip install in function builds (an index mirror).
	PipArgs []string
	// RelistPeriod is how often every cache is relisted, the safety net under the bus.
	RelistPeriod time.Duration
	// Workers is how many functions the controller reconciles at once; Resync how often it
	// revisits every function.
	Workers int
	Resync  time.Duration
	// BuildTimeout bounds one image build and its distribution.
	BuildTimeout    time.Duration
	ShutdownTimeout time.Duration
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if c.AMQPURL == "" {
		return errors.New("--amqp-url is required")
	}
	if c.Queue == "" {
		c.Queue = bus.QueueServerless
	}
	if c.RedisAddr == "" {
		return errors.New("--redis-addr is required")
	}
	for _, a := range []struct{ flag, v string }{{"--redis-addr", c.RedisAddr}, {"--gateway-address", c.GatewayAddress}} {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return fmt.Errorf("%s %q: %w", a.flag, a.v, err)
		}
	}
	if err := metrics.ValidateAddress("--metrics-address", c.MetricsAddress); err != nil {
		return err
	}
	if c.RelistPeriod <= 0 {
		c.RelistPeriod = 5 * time.Minute
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Resync <= 0 {
		c.Resync = time.Minute
	}
	if c.BuildTimeout <= 0 {
		c.BuildTimeout = 10 * time.Minute
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 15 * time.Second
	}
	return nil
}
