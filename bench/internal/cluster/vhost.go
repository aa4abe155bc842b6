package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"

	"minik8s.io/shared/bus/amqpbus"
)

// VHost creates vhost on the broker of amqpURL (through its management API on port 15672,
// with the URL's credentials) and returns amqpURL addressed to it, and a func that deletes
// it with everything declared in it. A benchmark cluster on its own vhost shares no queue
// with make up's cluster or a previous phase's.
func VHost(ctx context.Context, amqpURL, vhost string) (string, func(), error) {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return "", nil, fmt.Errorf("AMQP URL: %w", err)
	}
	mgmt := &url.URL{Scheme: "http", Host: net.JoinHostPort(u.Hostname(), "15672"), User: u.User}
	m := amqpbus.Management{URL: mgmt.String()}
	out, err := m.VHostFor(ctx, amqpURL, vhost)
	if err != nil {
		return "", nil, fmt.Errorf("%w (the benchmark needs RabbitMQ's management plugin, which make up enables)", err)
	}
	return out, func() { _ = m.DeleteVHost(context.WithoutCancel(ctx), vhost) }, nil
}
