package streaming

import (
	"context"
	"net"
	"strconv"

	"minik8s.io/shared/netns"
)

// DialNetNS connects to port on 127.0.0.1 inside the network namespace at path (a pod
// sandbox's /proc/<pid>/ns/net); the connection is used like any other.
func DialNetNS(ctx context.Context, path string, port uint16) (net.Conn, error) {
	return netns.Dial(ctx, path, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
}
