package app

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	good := func() Config {
		return Config{Kubeconfig: "/k", AMQPURL: "amqp://guest:guest@127.0.0.1:5672/v", RedisAddr: "127.0.0.1:6379", GatewayAddress: "127.0.0.1:8090"}
	}
	c := good()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Queue != "serverless" || c.Workers != 4 || c.Resync != time.Minute || c.RelistPeriod != 5*time.Minute || c.BuildTimeout != 10*time.Minute {
		t.Errorf("defaults: %+v", c)
	}
	for name, tc := range map[string]struct {
		mut  func(*Config)
		want string
	}{
		"no kubeconfig":   {func(c *Config) { c.Kubeconfig = "" }, "--kubeconfig"},
		"no amqp":         {func(c *Config) { c.AMQPURL = "" }, "--amqp-url"},
		"no redis":        {func(c *Config) { c.RedisAddr = "" }, "--redis-addr"},
		"redis no port":   {func(c *Config) { c.RedisAddr = "localhost" }, "--redis-addr"},
		"gateway no port": {func(c *Config) { c.GatewayAddress = "127.0.0.1" }, "--gateway-address"},
		"bad metrics":     {func(c *Config) { c.MetricsAddress = "nope" }, "--metrics-address"},
	} {
		t.Run(name, func(t *testing.T) {
			c := good()
			tc.mut(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestRedisPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"amqp://guest:guest@127.0.0.1:5672/minik8s-dafe4b07410f": "minik8s:serverless:minik8s-dafe4b07410f:",
		"amqp://guest:guest@127.0.0.1:5672/":                     "minik8s:serverless:default:",
		"amqp://u:p@rabbit:5672":                                 "minik8s:serverless:default:",
	} {
		if got := redisPrefix(in); got != want {
			t.Errorf("redisPrefix(%q) = %q, want %q", in, got, want)
		}
	}
}
